#!/usr/bin/env python3
"""Soak test: runs a devplace command for a long time and samples its resident memory (VmRSS, /proc) at a fixed
interval, so that growth (a leak) shows. Writes the samples as CSV and prints a one-line summary; exits 1 when
memory grew more than --max-growth between the end of the warm-up (the first quarter of the run) and the end.

    scripts/soak.py --csv mcmc.csv -- build/apps/devplace search --algo mcmc -g G.json -t T.yaml \
        --budget-seconds 600 -o /tmp/p.json

docs/reliability.md ("Soak") has the runs and their results."""
import argparse
import subprocess
import sys
import time


def rss_kib(pid):
    """Resident set size of `pid` in KiB, or None when it has exited."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        return None
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--csv", required=True, help="where to write seconds,rss_kib samples")
    parser.add_argument("--seconds", type=float, default=0,
                        help="stop the command (SIGTERM) after this many seconds; 0: let it finish")
    parser.add_argument("--max-growth", type=float, default=0.05,
                        help="largest allowed growth of RSS from the end of the warm-up to the end (fraction)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- followed by the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    start = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    samples = []
    stopped = False
    while proc.poll() is None:
        if args.seconds > 0 and time.monotonic() - start > args.seconds and not stopped:
            proc.terminate()
            stopped = True
        kib = rss_kib(proc.pid)
        if kib is not None:
            samples.append((time.monotonic() - start, kib))
        time.sleep(args.interval)
    with open(args.csv, "w") as f:
        f.write("seconds,rss_kib\n")
        for t, kib in samples:
            f.write(f"{t:.1f},{kib}\n")
    if (proc.returncode != 0 and not stopped) or len(samples) < 8:
        print(f"soak: the command exited {proc.returncode} after {len(samples)} samples", file=sys.stderr)
        return 1
    warm = samples[len(samples) // 4:]
    after_warmup = warm[0][1]
    end = max(kib for _, kib in warm[-max(1, len(warm) // 10):])  # the last tenth's peak
    peak = max(kib for _, kib in samples)
    growth = (end - after_warmup) / after_warmup
    print(f"soak: {samples[-1][0]:.0f} s, {len(samples)} samples; RSS {samples[0][1] / 1024:.1f} MiB at start, "
          f"{after_warmup / 1024:.1f} MiB after warm-up ({warm[0][0]:.0f} s), {end / 1024:.1f} MiB at the end, "
          f"peak {peak / 1024:.1f} MiB; growth after warm-up {growth * 100:+.2f}%")
    return 0 if growth <= args.max_growth else 1


if __name__ == "__main__":
    sys.exit(main())
