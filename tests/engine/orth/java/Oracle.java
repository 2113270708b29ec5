import com.abyss.orth.core.openapi.model.CallbackRequest;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.reflect.TypeToken;
import com.xxl.job.core.biz.model.HandleCallbackParam;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * The test oracle: real Gson (the jar Spark ships: 2.13.2, Orth's version) configured as xxl-tool's GsonTool, and
 * real Java serialization. Commands (one per argument file, results one line each on stdout):
 *   gson FILE...   Orth's retry pass on each file: strict UTF-8 read, blank check, fromJsonList; prints
 *                  "OK <toJson of the list, or null>" or "BLANK" or "UTF8" or "ERR <exception>".
 *   ser FILE...    each FILE holds lines "logId|logDateTim|handleCode|handleMsg-or-\N" (messages as JSON
 *                  strings); writes FILE.ser = ObjectOutputStream.writeObject(ArrayList) of them.
 *   deser FILE...  reads each Java stream and prints its elements, or "ERR <exception>".
 *   readlog FILE...  the lines Files.newBufferedReader + readLine return before an IOException: "N OK|ERR".
 */
public class Oracle {
    static final Gson GSON = new GsonBuilder().setDateFormat("yyyy-MM-dd HH:mm:ss").disableHtmlEscaping().create();

    public static void main(String[] args) throws Exception {
        String cmd = args[0];
        for (int i = 1; i < args.length; i++) {
            String path = args[i];
            if (cmd.equals("gson")) {
                System.out.println(gson(path));
            } else if (cmd.equals("readlog")) {
                System.out.println(readlog(path));
            } else if (cmd.equals("ser")) {
                ser(path);
            } else {
                System.out.println(deser(path));
            }
        }
    }

    static String gson(String path) {
        String data;
        try {
            data = Files.readString(Paths.get(path), StandardCharsets.UTF_8);
        } catch (Exception e) {
            return "UTF8";
        }
        if (data.trim().isEmpty()) {
            return "BLANK";
        }
        try {
            Type type = TypeToken.getParameterized(ArrayList.class, CallbackRequest.class).getType();
            ArrayList<CallbackRequest> list = GSON.fromJson(data, type);
            return "OK " + GSON.toJson(list);
        } catch (Throwable e) {
            return "ERR " + e.getClass().getName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' ');
        }
    }

    /** xxl-tool FileTool.readLines as OrthJobFileAppender.readLog uses it: how many lines come back. */
    static String readlog(String path) {
        int n = 0;
        try (java.io.BufferedReader r = Files.newBufferedReader(Paths.get(path), StandardCharsets.UTF_8)) {
            for (;;) {
                String line = r.readLine();
                if (line == null) {
                    break;
                }
                n++;
            }
        } catch (Exception e) {
            return n + " ERR";
        }
        return n + " OK";
    }

    static void ser(String path) throws Exception {
        List<HandleCallbackParam> list = new ArrayList<>();
        List<String> shared = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8)) {
            String[] f = line.split("\\|", 4);
            String msg = f[3].equals("\\N") ? null : GSON.fromJson(f[3], String.class);
            if (msg != null && msg.startsWith("@shared:")) {   // the same String object as an earlier element's
                int k = Integer.parseInt(msg.substring(8));
                msg = shared.get(k);
            } else {
                shared.add(msg);
            }
            list.add(new HandleCallbackParam(Long.parseLong(f[0]), Long.parseLong(f[1]), Integer.parseInt(f[2]), msg));
        }
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        ObjectOutputStream o = new ObjectOutputStream(b);
        o.writeObject(list);
        o.flush();
        Files.write(Paths.get(path + ".ser"), b.toByteArray());
    }

    static String deser(String path) {
        try {
            byte[] data = Files.readAllBytes(Paths.get(path));
            Object o = new ObjectInputStream(new ByteArrayInputStream(data)).readObject();
            return "OK " + GSON.toJson(String.valueOf(o));
        } catch (Throwable e) {
            return "ERR " + e.getClass().getName();
        }
    }
}
