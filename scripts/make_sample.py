"""Build the demo's sample workq log with wqtool's own writer: make_sample.py DIR [--records N]."""
import argparse

from wqtool.engine.workq.sample import SampleSpec, generate

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("dir")
ap.add_argument("--records", type=int, default=2000)
ap.add_argument("--segment-size", type=int, default=64 * 1024)
a = ap.parse_args()
n = generate(a.dir, SampleSpec(records=a.records, segment_size=a.segment_size, payload_max=96))
print(f"wrote {a.records} records ({n} bytes) to {a.dir}")
