package com.xxl.job.core.openapi.admin.dto;

import java.io.Serializable;

/** The shape of xxl-job HEAD (3.5.0-SNAPSHOT) CallbackData: logId, logDateTime, handleCode, handleMsg. */
public class CallbackData implements Serializable {
    private static final long serialVersionUID = 42L;
    private long logId;
    private long logDateTime;
    private int handleCode;
    private String handleMsg;

    public CallbackData() {}
    public CallbackData(long logId, long logDateTime, int handleCode, String handleMsg) {
        this.logId = logId; this.logDateTime = logDateTime; this.handleCode = handleCode; this.handleMsg = handleMsg;
    }
}
