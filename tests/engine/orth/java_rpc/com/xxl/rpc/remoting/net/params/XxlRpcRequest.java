package com.xxl.rpc.remoting.net.params;

import java.io.Serializable;

/** The fields of xxl-rpc 1.4.0/1.4.1 XxlRpcRequest.java:11-23 (v1.2.0: the same), in their declaration order:
 *  Hessian's UnsafeSerializer writes them in that order (java.lang and primitive fields first). Written for the
 *  tests, not copied: only the fields and accessors the oracle needs. */
public class XxlRpcRequest implements Serializable {
    private static final long serialVersionUID = 42L;

    private String requestId;
    private long createMillisTime;
    private String accessToken;

    private String className;
    private String methodName;
    private Class<?>[] parameterTypes;
    private Object[] parameters;

    private String version;

    public String getRequestId() { return requestId; }
    public void setRequestId(String v) { requestId = v; }
    public long getCreateMillisTime() { return createMillisTime; }
    public void setCreateMillisTime(long v) { createMillisTime = v; }
    public String getAccessToken() { return accessToken; }
    public void setAccessToken(String v) { accessToken = v; }
    public String getClassName() { return className; }
    public void setClassName(String v) { className = v; }
    public String getMethodName() { return methodName; }
    public void setMethodName(String v) { methodName = v; }
    public Class<?>[] getParameterTypes() { return parameterTypes; }
    public void setParameterTypes(Class<?>[] v) { parameterTypes = v; }
    public Object[] getParameters() { return parameters; }
    public void setParameters(Object[] v) { parameters = v; }
    public String getVersion() { return version; }
}
