"""Starts `mixc train CONFIG --out RUN`, waits until the run holds its folder
(the lock file appears right before data generation), sends SIGINT, and
prints the exit code and stderr.

usage: interrupt_during_setup.py MIXC CONFIG RUN
"""
import os
import signal
import subprocess
import sys
import time

mixc, config, run = sys.argv[1:4]
p = subprocess.Popen([mixc, "train", config, "--quiet", "--out", run],
                     stderr=subprocess.PIPE, text=True)
start = time.time()
while not os.path.exists(os.path.join(run, ".lock")) and time.time() - start < 120:
    if p.poll() is not None:
        break
    time.sleep(0.02)
time.sleep(0.3)
p.send_signal(signal.SIGINT)
err = p.communicate(timeout=120)[1]
print(p.returncode, err.strip())
