import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.xxl.job.core.openapi.admin.dto.CallbackData;

import java.io.File;
import java.io.FileOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;

/** xxl-job HEAD's appendFailCallbackFile: GsonTool.toJson(List<CallbackData>) (xxl-tool's Gson: date format,
 * HTML escaping off), named by Md5Tool.md5 of that string, FileTool.writeString (UTF-8) to
 * {logPath}/callbacklogs/xxl-job-callback-{md5}.log. Usage: Gen SPEC LOGPATH */
public class Gen {
    public static void main(String[] args) throws Exception {
        Gson gson = new GsonBuilder().setDateFormat("yyyy-MM-dd HH:mm:ss").disableHtmlEscaping().create();
        File dir = new File(args[1], "callbacklogs");
        dir.mkdirs();
        for (List<Spec.Row> batch : Spec.read(args[0])) {
            List<CallbackData> list = new ArrayList<>();
            for (Spec.Row r : batch) {
                list.add(new CallbackData(r.logId, r.date, r.code, r.msg));
            }
            byte[] data = gson.toJson(list).getBytes(StandardCharsets.UTF_8);
            String md5 = String.format("%032x", new BigInteger(1, MessageDigest.getInstance("MD5").digest(data)));
            try (FileOutputStream fos = new FileOutputStream(new File(dir, "xxl-job-callback-" + md5 + ".log"))) {
                fos.write(data);
            }
        }
    }
}
