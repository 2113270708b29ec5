import com.caucho.hessian.io.Hessian2Input;
import com.caucho.hessian.io.Hessian2Output;
import com.xxl.job.core.biz.AdminBiz;
import com.xxl.job.core.biz.model.HandleCallbackParam;
import com.xxl.job.core.biz.model.ReturnT;
import com.xxl.rpc.remoting.net.params.XxlRpcRequest;
import com.xxl.rpc.remoting.net.params.XxlRpcResponse;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * The xxl-rpc side of xxl-job 2.0.x-2.1.0 callbacks, with real Hessian (Debian libhessian-java) and the field
 * layouts of java_rpc/com: what the executor writes and what the admin makes of it.
 *
 *   request OUT REQUEST_ID MILLIS TOKEN|- (LOGID DATE CODE MSG|-)...
 *       what xxl-rpc 1.4.0 XxlRpcReferenceBean.java:201-208 builds for AdminBiz.callback(list), serialized as
 *       HessianSerializer.java:19-25 does (new Hessian2Output(os).writeObject(request); flush)
 *   admin IN ADMIN_TOKEN|- OUT [CODE [MSG]]
 *       what the admin does with the body: ServletServerHandler.java:84-91 (Hessian2Input.readObject),
 *       XxlRpcProviderFactory.java:185-233 (service key = className, token check, getMethod(methodName,
 *       parameterTypes), invoke), the XxlRpcResponse written as ServletServerHandler.java:62 does. Prints what the
 *       admin saw, one line per callback: logId logDateTim code msg. The admin's AdminBiz answers ReturnT(CODE, MSG).
 */
public class RpcOracle {
    static String orNull(String s) { return "-".equals(s) ? null : s; }

    static byte[] hessian(Object o) throws Exception {
        ByteArrayOutputStream os = new ByteArrayOutputStream();
        Hessian2Output ho = new Hessian2Output(os);
        ho.writeObject(o);
        ho.flush();
        ho.close();
        return os.toByteArray();
    }

    public static void main(String[] a) throws Exception {
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        if (a[0].equals("request")) {
            List<HandleCallbackParam> list = new ArrayList<HandleCallbackParam>();
            for (int i = 5; i + 3 < a.length; i += 4) {
                list.add(new HandleCallbackParam(Long.parseLong(a[i]), Long.parseLong(a[i + 1]),
                        new ReturnT<String>(Integer.parseInt(a[i + 2]), orNull(a[i + 3]))));
            }
            Method m = AdminBiz.class.getMethod("callback", List.class);
            XxlRpcRequest r = new XxlRpcRequest();
            r.setRequestId(a[2]);
            r.setCreateMillisTime(Long.parseLong(a[3]));
            r.setAccessToken(orNull(a[4]));
            r.setClassName(AdminBiz.class.getName());
            r.setMethodName(m.getName());
            r.setParameterTypes(m.getParameterTypes());
            r.setParameters(new Object[]{list});
            Files.write(Paths.get(a[1]), hessian(r));
            return;
        }
        if (a[0].equals("admin")) {
            byte[] body = Files.readAllBytes(Paths.get(a[1]));
            String token = orNull(a[2]);
            final int code = a.length > 4 ? Integer.parseInt(a[4]) : 200;
            final String msg = a.length > 5 ? orNull(a[5]) : null;
            Object o = new Hessian2Input(new ByteArrayInputStream(body)).readObject();
            XxlRpcRequest req = (XxlRpcRequest) o;
            XxlRpcResponse resp = new XxlRpcResponse();
            resp.setRequestId(req.getRequestId());
            out.println("request " + req.getRequestId() + " " + req.getCreateMillisTime() + " " + req.getAccessToken()
                    + " " + req.getClassName() + " " + req.getMethodName() + " " + req.getVersion());
            final List<String> seen = new ArrayList<String>();
            AdminBiz impl = new AdminBiz() {
                public ReturnT<String> callback(List<HandleCallbackParam> l) {
                    for (HandleCallbackParam p : l) {
                        seen.add(p.getLogId() + " " + p.getLogDateTim() + " " + p.getExecuteResult().getCode() + " "
                                + p.getExecuteResult().getMsg());
                    }
                    return new ReturnT<String>(code, msg);
                }
            };
            if (!AdminBiz.class.getName().equals(req.getClassName())) {
                resp.setErrorMsg("The serviceKey[" + req.getClassName() + "] not found.");
            } else if (token != null && !token.equals(req.getAccessToken())) {
                resp.setErrorMsg("The access token[" + req.getAccessToken() + "] is wrong.");
            } else {
                Method m = AdminBiz.class.getMethod(req.getMethodName(), req.getParameterTypes());
                resp.setResult(m.invoke(impl, req.getParameters()));
            }
            for (String s : seen) out.println(s);
            Files.write(Paths.get(a[3]), hessian(resp));
            return;
        }
        throw new IllegalArgumentException(a[0]);
    }
}
