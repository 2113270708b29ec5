package com.xxl.job.core.biz.model;

import java.io.Serializable;

/** The shape of xxl-job v2.0.0 HandleCallbackParam (int logId, long logDateTim, ReturnT executeResult; suid 42). */
public class HandleCallbackParam implements Serializable {
    private static final long serialVersionUID = 42L;
    private int logId;
    private long logDateTim;
    private ReturnT<String> executeResult;

    public HandleCallbackParam() {}
    public HandleCallbackParam(int logId, long logDateTim, ReturnT<String> executeResult) {
        this.logId = logId; this.logDateTim = logDateTim; this.executeResult = executeResult;
    }
    public int getLogId() { return logId; }
    public void setLogId(int logId) { this.logId = logId; }
    public long getLogDateTim() { return logDateTim; }
    public void setLogDateTim(long logDateTim) { this.logDateTim = logDateTim; }
    public ReturnT<String> getExecuteResult() { return executeResult; }
    public void setExecuteResult(ReturnT<String> executeResult) { this.executeResult = executeResult; }
}
