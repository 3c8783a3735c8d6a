"""What the small benchmark scripts (bench_copy, bench_readthrough,
bench_streams) write: --out/results.json (every run), --out/summary.json
and --out/summary.md, the Markdown also printed."""

import json
import os


def write_outputs(out, records, summary, md):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(records, f, indent=1)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(md)
    print(md)
