"""Names with every special character through sweep -> SLURM script -> report
(issue 56 class 3, a property test): for each printable ASCII character and a
few control characters c,

  1. a sweep named "a{c}b" is either refused where its name is written, or
     its SLURM batch script parses (bash -n), keeps every #SBATCH line in the
     header (before the first command), and names the job on one line;
  2. a model file named "m{c}x.mix" gives a cell whose name is a plain folder
     name ([A-Za-z0-9._-], not starting with '.'), or is refused at planning;
  3. a report over a sweep folder of an accepted name links only files that
     exist (link targets percent-decoded), and writes nothing outside its
     folder.

Usage: names_property.py MIXC BASE_TOML SCRATCH. Prints "N names checked".
"""
import json
import os
import re
import shutil
import string
import subprocess
import sys
import urllib.parse

mixc, base, scratch = sys.argv[1:4]
chars = [c for c in string.printable if c not in string.ascii_letters + string.digits] + ["\x01", "\x7f"]
checked = 0


def run(args, cwd=scratch):
    return subprocess.run([mixc] + args, cwd=cwd, capture_output=True, text=True)


def toml_string(s):
    return json.dumps(s)  # JSON's escapes are TOML basic-string escapes


for i, c in enumerate(chars):
    # 1. The sweep's name in its SLURM script.
    name = "a" + c + "b"
    spec = os.path.join(scratch, f"s{i}.toml")
    with open(spec, "w") as f:
        f.write(f"[sweep]\nname = {toml_string(name)}\nbase = {toml_string(base)}\n[grid]\n\"train.lr\" = [1e-3]\n")
    r = run(["sweep", spec, "--engine=slurm", "--dry-run", "--out", os.path.join(scratch, f"out{i}")])
    if r.returncode != 0:
        assert "[sweep] name" in r.stderr and "may hold letters, digits" in r.stderr or "starts with" in r.stderr, \
            (repr(c), r.stderr)
    else:
        script = r.stdout.split("--- the batch script (not submitted: --dry-run) ---\n", 1)[1]
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0, (repr(c), script)
        lines = script.splitlines()
        header_end = next(k for k, line in enumerate(lines) if line and not line.startswith("#"))
        sbatch = [k for k, line in enumerate(lines) if line.startswith("#SBATCH")]
        assert sbatch and max(sbatch) < header_end, (repr(c), script)
        jobs = [line for line in lines if line.startswith("#SBATCH --job-name=")]
        assert jobs == ['#SBATCH --job-name="mixc-' + name + '"'], (repr(c), jobs)  # one word for sbatch
        # 3. A report over a sweep folder of this name.
        folder = os.path.join(scratch, f"sw{i}")
        os.makedirs(folder)
        with open(os.path.join(folder, "sweep-meta.toml"), "w") as f:
            f.write(f"name = {toml_string(name)}\ntitle = {toml_string('T' + c)}\nscale = 'x'\n"
                    "axes = ['model.file', 'train.lr']\n")
        with open(os.path.join(folder, "results.csv"), "w") as f:
            f.write("cell,eval_acc,model.file,status,train.lr\nc,0.5,a.mix,ok,0.001\n")
        out = os.path.join(scratch, f"rep{i}")
        r = run(["report", folder, "-o", os.path.join(out, "report.md")])
        assert r.returncode == 0, (repr(c), r.stderr)
        md = open(os.path.join(out, "report.md")).read()
        links = re.findall(r"\]\(([^)\s]+)\)", md)
        assert links, (repr(c), md)
        for link in links:
            target = os.path.join(out, urllib.parse.unquote(link))
            assert os.path.isfile(target), (repr(c), link)
        for root, _, files in os.walk(out):
            for fname in files:
                assert os.path.realpath(os.path.join(root, fname)).startswith(os.path.realpath(out) + os.sep)
    checked += 1

    # 2. A model file's stem as a cell name.
    if c in "/\x00":
        continue
    model_dir = os.path.join(scratch, f"m{i}")
    os.makedirs(model_dir)
    model = os.path.join(model_dir, "m" + c + "x.mix")
    shutil.copy(os.path.join(os.path.dirname(base), "..", "..", "..", "stdlib", "based.mix"), model)
    spec = os.path.join(scratch, f"f{i}.toml")
    with open(spec, "w") as f:
        f.write(f"[sweep]\nname = \"f\"\nbase = {toml_string(base)}\n[grid]\n\"model.file\" = [{toml_string(model)}]\n"
                "\"train.lr\" = [1e-3, 2e-3]\n")
    r = run(["sweep", spec, "--engine=slurm", "--dry-run", "--out", os.path.join(scratch, f"fout{i}")])
    assert r.returncode == 0, (repr(c), r.stderr)
    cells = re.findall(r"^  '([^']*)'$", r.stdout, re.M)
    assert len(cells) == 2, (repr(c), r.stdout)
    for cell in cells:
        for part in cell.split("__"):
            assert re.fullmatch(r"[A-Za-z0-9._-]+", part) and not part.startswith("."), (repr(c), cell)
    checked += 1

print(f"{checked} names checked")
