"""The main job: ``python -m jetspark.demo`` (from a checkout: ``bash dev/run.sh``).

It starts a small local Spark with the jetspark jar and shows what runs where.
"""

from __future__ import annotations

import argparse

import jetspark


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jetspark.demo", description=__doc__)
    parser.add_argument("--master", default="local[2]", help="Spark master (default: local[2])")
    args = parser.parse_args(argv)

    with jetspark.session(master=args.master, conf={"spark.ui.enabled": "false"}) as jet:
        jet.spark.sparkContext.setLogLevel("ERROR")
        print(f"jetspark {jetspark.__version__} on Spark {jet.spark.version} ({args.master})")
        print(f"  driver JVM has jar {jet.version}; executor tasks found {sorted(set(jet.executor_versions()))}")


if __name__ == "__main__":
    main()
