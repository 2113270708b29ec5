package com.xxl.rpc.remoting.net.params;

import java.io.Serializable;

/** The fields of xxl-rpc 1.4.0 XxlRpcResponse.java:10-16, in declaration order (written for the tests). */
public class XxlRpcResponse implements Serializable {
    private static final long serialVersionUID = 42L;

    private String requestId;
    private String errorMsg;
    private Object result;

    public String getRequestId() { return requestId; }
    public void setRequestId(String v) { requestId = v; }
    public String getErrorMsg() { return errorMsg; }
    public void setErrorMsg(String v) { errorMsg = v; }
    public Object getResult() { return result; }
    public void setResult(Object v) { result = v; }
}
