import com.fasterxml.jackson.databind.ObjectMapper;
import com.xxl.job.core.biz.model.HandleCallbackParam;
import com.xxl.job.core.biz.model.ReturnT;

import java.io.File;
import java.io.FileOutputStream;
import java.util.ArrayList;
import java.util.List;

/** xxl-job 2.0.0-2.0.1's appendFailCallbackFile: JacksonUtil.writeValueAsString(list) (a default ObjectMapper),
 * then FileUtil.appendFileLine: content + "\r\n" appended as UTF-8 to {logPath}/xxl-job-callback.log.
 * Usage: Gen SPEC LOGPATH */
public class Gen {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        File file = new File(args[1], "xxl-job-callback.log");
        for (List<Spec.Row> batch : Spec.read(args[0])) {
            List<HandleCallbackParam> list = new ArrayList<>();
            List<ReturnT<String>> results = new ArrayList<>();
            for (Spec.Row r : batch) {
                ReturnT<String> res = r.shared >= 0 ? results.get(r.shared) : new ReturnT<String>(r.code, r.msg);
                if (r.shared < 0) res.setContent(r.content);
                results.add(res);
                list.add(new HandleCallbackParam((int) r.logId, r.date, res));
            }
            String content = mapper.writeValueAsString(list) + "\r\n";
            try (FileOutputStream fos = new FileOutputStream(file, true)) {
                fos.write(content.getBytes("utf-8"));
            }
        }
    }
}
