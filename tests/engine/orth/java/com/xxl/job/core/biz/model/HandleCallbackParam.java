package com.xxl.job.core.biz.model;

import java.io.Serializable;

/** xxl-job <= 3.2's HandleCallbackParam (serialVersionUID 42, four fields): what legacy retry files hold. */
public class HandleCallbackParam implements Serializable {
    private static final long serialVersionUID = 42L;
    private long logId;
    private long logDateTim;
    private int handleCode;
    private String handleMsg;

    public HandleCallbackParam() {}

    public HandleCallbackParam(long logId, long logDateTim, int handleCode, String handleMsg) {
        this.logId = logId;
        this.logDateTim = logDateTim;
        this.handleCode = handleCode;
        this.handleMsg = handleMsg;
    }

    public String toString() {
        return logId + "|" + logDateTim + "|" + handleCode + "|" + handleMsg;
    }
}
