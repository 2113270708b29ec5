import com.xxl.job.core.biz.model.HandleCallbackParam;
import com.xxl.job.core.biz.model.ReturnT;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.ObjectOutputStream;
import java.util.ArrayList;
import java.util.List;

/** xxl-job 2.2.0's appendFailCallbackFile: JdkSerializeTool.serialize(ArrayList<HandleCallbackParam>) written to
 * {logPath}/callbacklog/xxl-job-callback-{ms}.log (ms = MS, MS+1, ... per batch). Usage: Gen SPEC LOGPATH MS */
public class Gen {
    public static void main(String[] args) throws Exception {
        File dir = new File(args[1], "callbacklog");
        dir.mkdirs();
        long ms = Long.parseLong(args[2]);
        for (List<Spec.Row> batch : Spec.read(args[0])) {
            ArrayList<HandleCallbackParam> list = new ArrayList<>();
            List<ReturnT<String>> results = new ArrayList<>();
            for (Spec.Row r : batch) {
                ReturnT<String> res = r.shared >= 0 ? results.get(r.shared) : new ReturnT<String>(r.code, r.msg);
                if (r.shared < 0) res.setContent(r.content);
                results.add(res);
                list.add(new HandleCallbackParam(r.logId, r.date, res));
            }
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            ObjectOutputStream o = new ObjectOutputStream(b);
            o.writeObject(list);
            o.flush();
            try (FileOutputStream fos = new FileOutputStream(new File(dir, "xxl-job-callback-" + (ms++) + ".log"))) {
                fos.write(b.toByteArray());
            }
        }
    }
}
