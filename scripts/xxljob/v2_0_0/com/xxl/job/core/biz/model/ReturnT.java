package com.xxl.job.core.biz.model;

import java.io.Serializable;

/** The shape of xxl-job v2.0.0 ReturnT (fields code, msg, content; suid 42), for the fixture generator. */
public class ReturnT<T> implements Serializable {
    public static final long serialVersionUID = 42L;
    public static final ReturnT<String> SUCCESS = new ReturnT<String>(null);
    private int code;
    private String msg;
    private T content;

    public ReturnT() {}
    public ReturnT(int code, String msg) { this.code = code; this.msg = msg; }
    public ReturnT(T content) { this.code = 200; this.content = content; }
    public int getCode() { return code; }
    public void setCode(int code) { this.code = code; }
    public String getMsg() { return msg; }
    public void setMsg(String msg) { this.msg = msg; }
    public T getContent() { return content; }
    public void setContent(T content) { this.content = content; }
}
