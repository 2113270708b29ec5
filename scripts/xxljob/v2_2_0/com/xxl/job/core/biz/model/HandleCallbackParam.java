package com.xxl.job.core.biz.model;

import java.io.Serializable;

/** The shape of xxl-job v2.2.0 HandleCallbackParam (long logId, long logDateTim, ReturnT executeResult; suid 42). */
public class HandleCallbackParam implements Serializable {
    private static final long serialVersionUID = 42L;
    private long logId;
    private long logDateTim;
    private ReturnT<String> executeResult;

    public HandleCallbackParam() {}
    public HandleCallbackParam(long logId, long logDateTim, ReturnT<String> executeResult) {
        this.logId = logId; this.logDateTim = logDateTim; this.executeResult = executeResult;
    }
}
