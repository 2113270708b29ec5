import com.google.gson.Gson;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/** Reads a batch spec: one callback a line, "logId|logDateTim|code|msg|content|shared" (msg and content as JSON
 * strings or \N; shared: the index of an earlier entry of the batch whose result object this one reuses, or -);
 * a blank line ends a batch. */
public class Spec {
    public static final class Row {
        public long logId; public long date; public int code; public String msg; public String content; public int shared;
    }

    static String str(String s) {
        return s.equals("\\N") ? null : new Gson().fromJson(s, String.class);
    }

    public static List<List<Row>> read(String path) throws Exception {
        List<List<Row>> out = new ArrayList<>();
        List<Row> cur = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8)) {
            if (line.isEmpty()) {
                if (!cur.isEmpty()) { out.add(cur); cur = new ArrayList<>(); }
                continue;
            }
            String[] f = line.split("\\|", 6);
            Row r = new Row();
            r.logId = Long.parseLong(f[0]); r.date = Long.parseLong(f[1]); r.code = Integer.parseInt(f[2]);
            r.msg = str(f[3]); r.content = str(f[4]); r.shared = f[5].equals("-") ? -1 : Integer.parseInt(f[5]);
            cur.add(r);
        }
        if (!cur.isEmpty()) out.add(cur);
        return out;
    }
}
