package com.xxl.job.core.biz.model;

import java.io.Serializable;

/** The fields of xxl-job 2.1.0 HandleCallbackParam.java:8-14 (2.0.x: int logId), in declaration order. */
public class HandleCallbackParam implements Serializable {
    private static final long serialVersionUID = 42L;

    private long logId;
    private long logDateTim;

    private ReturnT<String> executeResult;

    public HandleCallbackParam() {}
    public HandleCallbackParam(long logId, long logDateTim, ReturnT<String> executeResult) {
        this.logId = logId;
        this.logDateTim = logDateTim;
        this.executeResult = executeResult;
    }
    public long getLogId() { return logId; }
    public long getLogDateTim() { return logDateTim; }
    public ReturnT<String> getExecuteResult() { return executeResult; }
}
