# A Slurm cluster of several nodes on this one machine, for the multi-node tests (source it after
# tests/lib/harness.sh and tests/lib/slurm.sh; as root, with slurm-wlm and munge installed).
#
# One private network + mount namespace, kept alive by a holder process, holds munged, slurmctld,
# every slurmd, every client and every job: all traffic stays on that namespace's own loopback
# (fixed ports collide with nothing, nothing leaves the machine), and /etc/hosts, which names the
# nodes, is bound over only there. Each slurmd runs in a UTS namespace of its own (hostname
# nodeI), which everything it starts inherits: slurmstepd, batch scripts, MPI ranks. Debian 12's
# Slurm is built with MULTIPLE_SLURMD, so the slurmd share one munged and differ by Port= and
# %n paths. With CLUSTER_SEPARATE_IPC=1 each node also gets an IPC namespace of its own, so UCX
# sees separate machines and carries inter-node traffic over TCP; UCX 1.13 then sometimes hangs
# in MPI_Finalize after the work is done (openucx/ucx#8738), so by default the nodes share one
# IPC namespace and UCX uses shared memory between them. The MPI process map (and so local ranks
# and MPI_COMM_TYPE_SHARED) comes from Slurm's node list either way.
#
#   cluster_start [NODES [CPUS]]  start NODES nodes (default 4) of CPUS CPUs (default 2); waits
#                                 until every node is idle; prints the seconds, or why not; sets
#                                 CLUSTER_DIR and CLUSTER_NETNS (so call it in this shell, not
#                                 in $(...))
#   cluster_run CMD...            CMD on the cluster's "login node": its namespaces, SLURM_CONF set
#   cluster_nodexec               the path of hydra's launcher: mpiexec -launcher rsh
#                                 -launcher-exec "$(cluster_nodexec)" -hosts node1:2,node2:2 ...
#   cluster_stop                  cancel the jobs, stop the daemons, kill whatever is left in the
#                                 cluster's namespace, remove its directory; prints the seconds
#                                 (call it in this shell too); does nothing when no cluster runs
#   cluster_stop_stale            stop the clusters whose starting shell is gone (a run killed
#                                 before it could stop its cluster)
#   cluster_leftovers             what of the last cluster survives (a process in its namespace,
#                                 its directory), one line each; nothing when it is all gone
# Nothing outside is touched: no `ip netns add`, no edit of /etc, no interface in the root
# namespace; the namespaces vanish with their last process.

CLUSTER_DIR=
CLUSTER_NETNS=
CLUSTER_CTLD_PORT=6817
CLUSTER_SLURMD_PORT=17001  # node I listens on this + I - 1

cluster_pid() { # NAME: the PID its file in run/ holds
  local p
  p=$(cat "$CLUSTER_DIR/run/$1.pid" 2>/dev/null) && [[ $p =~ ^[0-9]+$ ]] && echo "$p"
}

# The holder's PID, checked: alive, and in a network namespace other than this shell's.
cluster_holder() {
  local h ns
  [[ -n $CLUSTER_DIR ]] && h=$(cluster_pid holder) || return 1
  ns=$(readlink "/proc/$h/ns/net" 2>/dev/null) || return 1
  [[ $ns != "$(readlink /proc/self/ns/net)" ]] || return 1
  echo "$h"
}

cluster_run() {
  local h
  h=$(cluster_holder) || { echo "cluster_run: no cluster runs" >&2; return 1; }
  # Entering a mount namespace resets the cwd to /: --wd keeps it (the same path exists there).
  nsenter -t "$h" -n -m --wd="$PWD" -- env SLURM_CONF="$CLUSTER_DIR/slurm.conf" "$@"
}

cluster_nodexec() { echo "$CLUSTER_DIR/bin/nodexec"; }

cluster_all_idle() {
  [[ $(cluster_run sinfo -h -o %t 2>/dev/null | sort -u) == idle ]] &&
    (($(cluster_run sinfo -h -N -o %N 2>/dev/null | wc -l) == CLUSTER_NODES))
}

cluster_start() {
  CLUSTER_NODES=${1:-4}
  local cpus=${2:-2} start=$SECONDS host h i ipc=""
  [[ ${CLUSTER_SEPARATE_IPC:-0} == 1 ]] && ipc=--ipc
  # Short: the pmi2 socket in a node's spool directory must fit in 108 bytes.
  CLUSTER_DIR=$(mktemp -d /tmp/mlps-cluster.XXXXXX) || return 1
  chmod 755 "$CLUSTER_DIR"  # munged wants every directory above its socket searchable
  mkdir -p "$CLUSTER_DIR"/{run,state,spool,log,key,bin}
  chmod 700 "$CLUSTER_DIR/key"
  echo "$$" >"$CLUSTER_DIR/run/owner.pid"  # the shell that must stop it (cluster_stop_stale)
  host=$(hostname -s 2>/dev/null || hostname)
  local names=()
  for ((i = 1; i <= CLUSTER_NODES; i++)); do names+=("node$i"); done
  printf '127.0.0.1 localhost %s %s\n' "$host" "${names[*]}" >"$CLUSTER_DIR/hosts"

  # The holder: a sleep in a new network + mount namespace, in a session of its own so that it
  # outlives a caller's process-group signal until cluster_stop kills it.
  setsid unshare --net --mount --propagation private -- \
    sh -c "echo \$\$ >'$CLUSTER_DIR/run/holder.pid'; exec sleep infinity" \
    </dev/null >/dev/null 2>&1 &
  disown $!
  wait_until 10 cluster_holder >/dev/null || { echo "the namespace holder did not start"; return 1; }
  h=$(cluster_holder)
  CLUSTER_NETNS=$(readlink "/proc/$h/ns/net")
  # A new namespace's loopback is down. Slurm resolves even "127.0.0.1" with AI_ADDRCONFIG,
  # which glibc answers only when an IPv4 address other than 127.0.0.1 exists: add 127.0.0.2.
  nsenter -t "$h" -n -m -- sh -c "ip link set lo up && ip addr add 127.0.0.2/8 dev lo &&
    mount --bind '$CLUSTER_DIR/hosts' /etc/hosts" ||
    { echo "could not set up the cluster's network namespace"; return 1; }

  head -c 1024 /dev/urandom >"$CLUSTER_DIR/key/munge.key" && chmod 400 "$CLUSTER_DIR/key/munge.key"
  setsid nsenter -t "$h" -n -m -- munged -F --key-file="$CLUSTER_DIR/key/munge.key" \
    --socket="$CLUSTER_DIR/run/munge.sock" --pid-file="$CLUSTER_DIR/run/munged.pid" \
    --seed-file="$CLUSTER_DIR/run/munged.seed" --log-file="$CLUSTER_DIR/log/munged.log" \
    </dev/null >"$CLUSTER_DIR/log/munged.out" 2>&1 &
  disown $!
  wait_until 15 test -S "$CLUSTER_DIR/run/munge.sock" ||
    { echo "munged did not start: $(log_errors "$CLUSTER_DIR/log/munged.out")"; return 1; }

  # %n in SlurmdSpoolDir is needed: the pmi2 socket there has no node name in it, and two
  # steps' daemons sharing a spool would unlink each other's.
  cat >"$CLUSTER_DIR/slurm.conf" <<CONF
ClusterName=mlpscluster
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CLUSTER_CTLD_PORT
AuthInfo=socket=$CLUSTER_DIR/run/munge.sock
StateSaveLocation=$CLUSTER_DIR/state
SlurmdSpoolDir=$CLUSTER_DIR/spool/%n
SlurmctldPidFile=$CLUSTER_DIR/run/slurmctld.pid
SlurmdPidFile=$CLUSTER_DIR/run/slurmd-%n.pid
SlurmctldLogFile=$CLUSTER_DIR/log/slurmctld.log
SlurmdLogFile=$CLUSTER_DIR/log/slurmd-%n.log
$(slurm_conf_settings)
NodeName=node[1-$CLUSTER_NODES] NodeHostname=node[1-$CLUSTER_NODES] NodeAddr=127.0.0.1 Port=[$CLUSTER_SLURMD_PORT-$((CLUSTER_SLURMD_PORT + CLUSTER_NODES - 1))] CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=cluster Nodes=node[1-$CLUSTER_NODES] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  setsid nsenter -t "$h" -n -m -- slurmctld -D -f "$CLUSTER_DIR/slurm.conf" \
    </dev/null >"$CLUSTER_DIR/log/slurmctld.out" 2>&1 &
  disown $!
  # unshare, never `ip netns exec`: that remounts /sys, and slurmd's cgroup set-up then fails.
  for ((i = 1; i <= CLUSTER_NODES; i++)); do
    mkdir -p "$CLUSTER_DIR/spool/node$i"
    setsid nsenter -t "$h" -n -m -- unshare --uts $ipc -- \
      sh -c "hostname node$i && exec slurmd -D -f '$CLUSTER_DIR/slurm.conf' -N node$i" \
      </dev/null >"$CLUSTER_DIR/log/slurmd-node$i.out" 2>&1 &
    disown $!  # this shell need not hear of them: cluster_stop ends them
  done
  # hydra's rsh-style launcher: "nodexec HOST COMMAND-LINE" in HOST's namespaces (mpiexec already
  # runs in the cluster's). Hydra quotes the proxy's path as for a remote shell: sh -c "$*".
  cat >"$CLUSTER_DIR/bin/nodexec" <<WRAP
#!/bin/sh
pid=\$(cat "$CLUSTER_DIR/run/slurmd-\$1.pid") || exit 255
shift; exec nsenter -t "\$pid" -u -i -- /bin/sh -c "\$*"
WRAP
  chmod 755 "$CLUSTER_DIR/bin/nodexec"
  if ! wait_until 60 cluster_all_idle; then
    echo "not every node idle after 60 s ($(cluster_run sinfo -h -N -o '%N %t' 2>&1 | tr '\n' ' '));" \
      "slurmctld: $(log_errors "$CLUSTER_DIR"/log/slurmctld.*);" \
      "slurmd: $(log_errors "$CLUSTER_DIR"/log/slurmd-*)"
    return 1
  fi
  echo "$((SECONDS - start))"
}

cluster_stop() {
  [[ -n $CLUSTER_DIR && -d $CLUSTER_DIR ]] || return 0
  local start=$SECONDS h pid name p
  if h=$(cluster_holder); then
    cluster_run scancel --user=root 2>/dev/null
    cluster_jobs_gone() { [[ -z $(cluster_run squeue -h -o %i 2>/dev/null) ]]; }
    wait_until 20 cluster_jobs_gone
    # The daemons in reverse order of their start: TERM, then KILL after 10 s. A PID file whose
    # process is outside the cluster's namespace is stale and left alone.
    local group pids
    for group in "$(cd "$CLUSTER_DIR/run" && ls slurmd-*.pid 2>/dev/null | sed 's/\.pid$//')" \
      slurmctld munged; do
      pids=()
      for name in $group; do
        pid=$(cluster_pid "$name") || continue
        [[ $(readlink "/proc/$pid/ns/net" 2>/dev/null) == "$CLUSTER_NETNS" ]] && pids+=("$pid")
      done
      ((${#pids[@]})) || continue
      kill -TERM "${pids[@]}" 2>/dev/null
      for pid in "${pids[@]}"; do wait_until 10 process_gone "$pid" || kill -KILL "$pid" 2>/dev/null; done
    done
    # Whatever is left in the namespace is the cluster's (steps, ranks of a killed job), the
    # holder last: cluster_holder made sure it is not this shell's namespace.
    for p in /proc/[0-9]*; do
      pid=${p#/proc/}
      [[ $pid == "$h" ]] && continue
      [[ $(readlink "$p/ns/net" 2>/dev/null) == "$CLUSTER_NETNS" ]] && kill -KILL "$pid" 2>/dev/null
    done
    kill -KILL "$h" 2>/dev/null
    wait_until 10 process_gone "$h"
  fi
  rm -rf "$CLUSTER_DIR"
  echo "$((SECONDS - start))"
}

cluster_leftovers() {
  local p
  [[ -n $CLUSTER_DIR && -e $CLUSTER_DIR ]] && echo "directory $CLUSTER_DIR"
  [[ -n $CLUSTER_NETNS ]] || return 0
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/ns/net" 2>/dev/null) == "$CLUSTER_NETNS" ]] &&
      echo "process ${p#/proc/} in the cluster's namespace: $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -c1-60)"
  done
}

cluster_stop_stale() {
  local dir mine=$CLUSTER_DIR netns=$CLUSTER_NETNS h
  for dir in /tmp/mlps-cluster.*; do
    [[ -d $dir && $dir != "$mine" ]] || continue
    CLUSTER_DIR=$dir
    h=$(cluster_pid owner) && ! process_gone "$h" && continue  # its test still runs
    if h=$(cluster_holder); then
      CLUSTER_NETNS=$(readlink "/proc/$h/ns/net")
      echo "# stopping the cluster an earlier run left in $dir" >&2
      cluster_stop >/dev/null
    fi
  done
  CLUSTER_DIR=$mine CLUSTER_NETNS=$netns
}
