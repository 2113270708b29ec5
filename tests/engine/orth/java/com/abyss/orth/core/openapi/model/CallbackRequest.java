package com.abyss.orth.core.openapi.model;

import java.io.Serializable;

/** Orth's CallbackRequest as the spec describes it (fields in declaration order): Gson's view of a retry file. */
public class CallbackRequest implements Serializable {
    private static final long serialVersionUID = 42L;
    private long logId;
    private long logDateTim;
    private int handleCode;
    private String handleMsg;

    public CallbackRequest() {}

    public CallbackRequest(long logId, long logDateTim, int handleCode, String handleMsg) {
        this.logId = logId;
        this.logDateTim = logDateTim;
        this.handleCode = handleCode;
        this.handleMsg = handleMsg;
    }
}
