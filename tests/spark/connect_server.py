"""A Spark Connect server on loopback for the tests: ``python connect_server.py PORT`` (token from the
SPARK_CONNECT_AUTHENTICATE_TOKEN environment variable). A classic local[2] session with Spark's Connect plugin,
as sbin/start-connect-server.sh starts one; prints ``ready`` when it serves, runs until killed (at most 15
minutes)."""
import os
import socket
import sys
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from pyspark.sql import SparkSession  # noqa: E402

port = int(sys.argv[1])
spark = (SparkSession.builder.master("local[2]")
         .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
         .config("spark.connect.grpc.binding.port", str(port))
         .config("spark.connect.grpc.binding.address", "127.0.0.1")
         .config("spark.connect.authenticate.token", os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"])
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        break
    except OSError:
        time.sleep(0.2)
print("ready", flush=True)
time.sleep(900)
