package com.xxl.job.core.biz;

import com.xxl.job.core.biz.model.HandleCallbackParam;
import com.xxl.job.core.biz.model.ReturnT;

import java.util.List;

/** xxl-job 2.0.2-2.1.0 AdminBiz.java:12-23 (the callback method; MAPPING "/api" at 2.0.2 AdminBiz.java:14). */
public interface AdminBiz {
    String MAPPING = "/api";

    ReturnT<String> callback(List<HandleCallbackParam> callbackParamList);
}
