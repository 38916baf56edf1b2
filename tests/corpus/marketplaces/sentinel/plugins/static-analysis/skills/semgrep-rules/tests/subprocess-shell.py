import subprocess


def run(cmd):
    # ruleid: subprocess-shell-true
    subprocess.run(cmd, shell=True)
    # ruleid: subprocess-shell-true
    subprocess.check_output(cmd, check=True, shell=True)
    # ok: subprocess-shell-true
    subprocess.run(["ls", "-l"])
