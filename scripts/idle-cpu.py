#!/usr/bin/env python3
"""Server CPU with N idle connections: opens N PyMySQL connections to 127.0.0.1:PORT, waits 2 s,
samples the server's user+sys ticks (/proc/PID/stat) over 20 s, prints the share of a core.
Exits non-zero if a connection fails. Usage: idle-cpu.py PORT N SERVER_PID (PyMySQL: the
venv ./run-tests makes, /var/tmp/shoal-venv/bin/python)."""
import pymysql, sys, time, os
port=int(sys.argv[1]); n=int(sys.argv[2]); pid=int(sys.argv[3])
conns=[pymysql.connect(host='127.0.0.1',port=port,user='root') for _ in range(n)]
def ticks():
    f=open(f'/proc/{pid}/stat').read().split(')')[1].split()
    return int(f[11])+int(f[12])
time.sleep(2)
t0=ticks(); time.sleep(20); t1=ticks()
print(f"{n} idle connections: server CPU {(t1-t0)/os.sysconf('SC_CLK_TCK')/20*100:.2f}% of a core over 20 s")
for c in conns: c.close()
