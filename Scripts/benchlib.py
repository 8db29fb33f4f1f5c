"""What Scripts/bench-record and Scripts/bench-remux share: building pushav, generating the inputs with the ffmpeg
CLI, and measuring two commands side by side (interleaved runs, so a busier moment of the machine hits both).

Each run's CPU time (user + sys), wall time and peak RSS come from the kernel's own accounting of the finished child
(wait4), the same figures GNU time prints.
"""
import os, shutil, statistics, subprocess, sys, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def arguments(default_runs, description):
    """The benchmarks' command line: RUNS, and --baseline BINARY, an earlier pushav build measured in the same rounds
    (its figures are the "before" of a change; build one with `git worktree add` and `swift build -c release`)."""
    import argparse
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="?", type=int, default=default_runs, help=f"rounds after one warm-up (default {default_runs})")
    parser.add_argument("--baseline", metavar="BINARY", help="another pushav binary to measure beside this one")
    args = parser.parse_args()
    if args.baseline and not os.access(args.baseline, os.X_OK):
        parser.error(f"--baseline {args.baseline}: not an executable file")
    return args


def prepare():
    """Installs what the benchmarks need, builds the release binary; returns (pushav path, work folder)."""
    subprocess.run([f"{root}/Scripts/setup", "--tools"], check=True)
    subprocess.run(["swift", "build", "-c", "release", "--product", "pushav"], cwd=root, check=True,
                   stdout=subprocess.DEVNULL)
    work = os.environ.get("BENCH_DIR", f"{root}/.build/bench")
    os.makedirs(work, exist_ok=True)
    return f"{root}/.build/release/pushav", work


# A 1080p30 camera picture: a noisy still background with a white box that moves at 10-14 s and 35-38 s.
_MOVING_BOX = ("[0:v][1:v]overlay=x='if(lt(t,10),200,if(lt(t,14),200+(t-10)*300,if(lt(t,35),1400,"
               "if(lt(t,38),1400-(t-35)*300,500))))':y=400:eval=frame,format=yuv420p[v]")

def _camera(bframes):
    """The moving-box camera picture, encoded like x264's defaults (3 B-frames, B-pyramid) or P-only (most IP
    cameras: every picture a reference picture)."""
    return [
        "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30,trim=end_frame=1,loop=loop=-1:size=1,setpts=N/30/TB,"
                             "noise=alls=10:allf=t,trim=duration=60",
        "-f", "lavfi", "-i", "color=c=white:size=240x240:rate=30:duration=60",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=60",
        "-filter_complex", _MOVING_BOX, "-map", "[v]", "-map", "2:a",
        "-c:v", "libx264", "-preset", "veryfast", *([] if bframes else ["-bf", "0"]), "-b:v", "4M", "-maxrate", "4M",
        "-bufsize", "8M", "-g", "60", "-keyint_min", "60", "-sc_threshold", "0", "-c:a", "aac", "-b:a", "96k"]


def _pattern(bframes):
    """A moving test pattern with noise everywhere: every segment full of data, the remux worst case."""
    return [
        "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30,noise=alls=8:allf=t",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "60",
        "-c:v", "libx264", "-preset", "veryfast", *([] if bframes else ["-bf", "0"]), "-b:v", "4M", "-maxrate", "4M",
        "-bufsize", "8M", "-g", "60", "-keyint_min", "60", "-sc_threshold", "0", "-c:a", "aac", "-b:a", "128k"]


# name -> (what it is, ffmpeg arguments after `-y`, without the output)
INPUTS = {
    "motion-bframes": ("60 s 1080p30 H.264 with B-frames, 4 Mb/s + AAC, a box moving at 10-14 s and 35-38 s",
                       _camera(bframes=True)),
    "motion-ponly": ("60 s 1080p30 H.264 P-only, 4 Mb/s + AAC, a box moving at 10-14 s and 35-38 s",
                     _camera(bframes=False)),
    "remux-bframes": ("60 s 1080p30 H.264 with B-frames, 4 Mb/s + AAC", _pattern(bframes=True)),
    "remux-ponly": ("60 s 1080p30 H.264 P-only, 4 Mb/s + AAC", _pattern(bframes=False)),
}


def media(work, name):
    """The input `name` of INPUTS, generated once into the work folder; returns (path, description)."""
    description, arguments = INPUTS[name]
    path = f"{work}/{name}.mp4"
    if not os.path.exists(path):
        print(f"generating {path} ({description})…", file=sys.stderr)
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *arguments, path + ".partial.mp4"], check=True)
        os.rename(path + ".partial.mp4", path)
    return path, description


class Sample:
    def __init__(self, cpu, wall, rss_mib):
        self.cpu, self.wall, self.rss = cpu, wall, rss_mib


def run_once(command, outputs=()):
    """Runs `command` (output discarded) and returns its Sample; a failing command ends the benchmark.

    Every run starts from the same disk state: what the previous run wrote to `outputs` (files or folders) is removed
    and nothing is left dirty in the page cache (both untimed). Otherwise a run pays for replacing the previous run's
    files and for the write-back of everything written before it, and the kernel throttles whichever process writes
    most (seen here: the same remux took 0.11 s or 0.24 s, its system time 0.04 s or 0.16 s)."""
    for path in outputs:
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    os.sync()
    began = time.monotonic()
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"benchmark command failed ({child.returncode}): {' '.join(command)}\n{child.stderr.read().decode()}")
    child.stderr.close()
    # ru_maxrss is in KiB on Linux.
    return Sample(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024)


def compare(commands, runs, outputs=None):
    """Runs every command of `commands` (label -> argv) once to warm up, then `runs` rounds of one run each, in
    turn; returns label -> [Sample]. `outputs` (label -> paths) is what each command writes (see run_once)."""
    outputs = outputs or {}
    for label, command in commands.items():
        run_once(command, outputs.get(label, ()))
    samples = {label: [] for label in commands}
    for _ in range(runs):
        for label, command in commands.items():
            samples[label].append(run_once(command, outputs.get(label, ())))
    return samples


def outputs(commands):
    """What each command writes: a pushav command's --out folder, an ffmpeg command's last argument unless it is
    `-` (label -> [path])."""
    found = {}
    for label, argv in commands.items():
        if "--out" in argv:
            found[label] = [argv[argv.index("--out") + 1]]
        elif os.path.basename(argv[0]) == "ffmpeg" and argv[-1] != "-":
            found[label] = [argv[-1]]
    return found


class Figure:
    """Median, min and max of one measure over a command's runs."""

    def __init__(self, values):
        self.median, self.low, self.high = statistics.median(values), min(values), max(values)

    def __str__(self):
        return f"{self.median:.2f} [{self.low:.2f}–{self.high:.2f}]"


def figure(samples, measure):
    return Figure([getattr(s, measure) for s in samples])


def ratio(ours, theirs, measure):
    """The median ratio, with the range of the per-round ratios (each round ran both commands back to back)."""
    per_round = [getattr(a, measure) / getattr(b, measure) for a, b in zip(ours, theirs)]
    return Figure(per_round)


def table(rows, header):
    """Prints rows (lists of strings) as a plain aligned table."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
