package com.xxl.job.core.biz.model;

import java.io.Serializable;

/** The fields of xxl-job 2.0.2-2.1.x ReturnT.java:10-21, in declaration order. */
public class ReturnT<T> implements Serializable {
    public static final long serialVersionUID = 42L;
    public static final int SUCCESS_CODE = 200;
    public static final int FAIL_CODE = 500;

    private int code;
    private String msg;
    private T content;

    public ReturnT() {}
    public ReturnT(int code, String msg) { this.code = code; this.msg = msg; }
    public int getCode() { return code; }
    public String getMsg() { return msg; }
    public T getContent() { return content; }
}
