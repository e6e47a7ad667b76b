"""The measurements of scripts/load-fleet (run by it, under scripts/with-postgres)."""

import json
import os
import re
import statistics
import subprocess
import tempfile
import threading

JOBS = os.environ["LOAD_FLEET_JOBS"]
RUNS = int(os.environ["LOAD_FLEET_RUNS"])
SECONDS = int(os.environ["LOAD_FLEET_SECONDS"])
POSTGRES = os.environ["VOUCH_TEST_POSTGRES"]
VOUCH = "target/release/vouch"
CLIP = os.path.abspath("tests/media/photo_speaking_640x480.mp4")
CONFIGURATIONS = [("SQLite, 1 server", "sqlite", 1), ("PostgreSQL, 1 server", "postgres", 1),
                  ("PostgreSQL, 3 servers", "postgres", 3)]


def jobs_load(backend, servers):
    extra = [] if backend == "sqlite" else ["--database", POSTGRES, "--servers", str(servers)]
    output = subprocess.run([VOUCH, "jobs", "load", "--jobs", JOBS, *extra], check=True,
                            capture_output=True, text=True).stdout
    return {kind: float(re.search(rf"^{kind}:\s+(\d+) /s", output, re.M).group(1))
            for kind in ("creates", "deliveries")}


def schema_url(name):
    subprocess.run(["psql", POSTGRES, "-q", "-v", "ON_ERROR_STOP=1", "-c", f"DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"],
                   check=True, env=dict(os.environ, PGOPTIONS="--client-min-messages=warning"))
    return f"{POSTGRES}?options=-csearch_path%3D{name}"


def http_phases(backend, servers, run):
    """Control-plane and process-video requests per second against `servers` `vouch serve`."""
    with tempfile.TemporaryDirectory() as work:
        config = os.path.join(work, "vouch.json")
        subprocess.run([VOUCH, "init", "--config", config, "--db", os.path.join(work, "v.sqlite")],
                       check=True, capture_output=True)
        options = json.load(open(config))
        options["models_dir"] = os.path.abspath("models")
        if backend == "postgres":
            options["database"] = schema_url(f"load_fleet_{run}_{servers}")
        json.dump(options, open(config, "w"))
        token = json.loads(subprocess.run([VOUCH, "keys", "--config", config, "create", "--project", "load"],
                                          check=True, capture_output=True, text=True).stdout)["token"]
        subprocess.run([VOUCH, "request", "--config", config, "POST", "/api-consent/consent",
                        "-H", f"Authorization: Bearer {token}",
                        "--json", '{"is_consent_given": true, "user_fullname": "load-user"}'],
                       check=True, capture_output=True)
        processes, bases = [], []
        try:
            for _ in range(servers):
                process = subprocess.Popen([VOUCH, "serve", "--config", config, "--listen", "127.0.0.1:0",
                                            "--no-worker"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                           text=True)
                processes.append(process)
                line = process.stdout.readline()
                bases.append(line.strip().removeprefix("vouch serve: listening on "))
            env = dict(os.environ, VOUCH_TOKEN=token, VOUCH_CLIP=CLIP)
            for base in bases:  # one warm-up upload per server: the numbers are the steady state's
                subprocess.run(["wrk", "-t1", "-c1", "-d1s", "--timeout", "60s", "-s", "scripts/load/upload.lua",
                                base], env=env, check=True, capture_output=True)
            control = wrk_all(bases, env, "scripts/load/control.lua", 63)
            videos = wrk_all(bases, env, "scripts/load/upload.lua", 3)
        finally:
            for process in processes:
                process.terminate()
                process.wait()
        return {"control": control, "process-video": videos}


def wrk_all(bases, env, script, connections):
    """One wrk per server at once, `connections` split between them; the summed requests/s."""
    results = [None] * len(bases)
    share = connections // len(bases)

    def one(index):
        output = subprocess.run(["wrk", f"-t{min(share, 2)}", f"-c{share}", f"-d{SECONDS}s", "--timeout", "60s",
                                 "-s", script, bases[index]], env=env, check=True, capture_output=True,
                                text=True).stdout
        line = re.search(r"^RESULT (.*)$", output, re.M).group(1)
        fields = dict(part.split("=") for part in line.split())
        if int(fields["non2xx"]) or int(fields["socket_errors"]):
            raise SystemExit(f"load-fleet: {script} against {bases[index]}: {line}")
        results[index] = float(fields["rps"])

    threads = [threading.Thread(target=one, args=(index,)) for index in range(len(bases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if any(result is None for result in results):
        raise SystemExit("load-fleet: a wrk run failed")
    return sum(results)


measured = {name: {} for name, _, _ in CONFIGURATIONS}
for run in range(RUNS):
    for name, backend, servers in CONFIGURATIONS:
        figures = jobs_load(backend, servers)
        figures.update(http_phases(backend, servers, run))
        for kind, value in figures.items():
            measured[name].setdefault(kind, []).append(value)

kinds = [("creates", "job creates/s"), ("deliveries", "job deliveries/s"),
         ("control", "control plane req/s"), ("process-video", "process-video req/s")]
print(f"load-fleet: median of {RUNS} runs on {os.cpu_count()} cores (PostgreSQL on the same machine); "
      f"{JOBS} jobs; HTTP phases {SECONDS} s each, control plane 63 connections, process-video 3 concurrent "
      f"uploads of the 5 s 640x480 clip, split over the servers")
base = {kind: statistics.median(measured[CONFIGURATIONS[0][0]][kind]) for kind, _ in kinds}
print("| configuration | " + " | ".join(f"{label} | ratio" for _, label in kinds) + " |")
print("|---|" + "---:|---:|" * len(kinds))
for name, _, _ in CONFIGURATIONS:
    cells = []
    for kind, _ in kinds:
        value = statistics.median(measured[name][kind])
        cells.append(f"{value:.1f} | {value / base[kind]:.2f}" if kind == "process-video"
                     else f"{value:.0f} | {value / base[kind]:.2f}")
    print(f"| {name} | " + " | ".join(cells) + " |")
