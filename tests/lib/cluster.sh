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
# With CLUSTER_LINK_RATE=RATE (tc's units: 400mbit) each node is a network namespace of its own
# as well (plus IPC and mount), joined to the login node's by a veth over a bridge (10.77.0.0/24;
# the login node 10.77.0.1, node I 10.77.0.1I): every byte between nodes crosses its sender's
# veth, shaped to RATE by a token bucket (tc tbf), over UCX's TCP transport. Each node sees its
# own network devices in /sys/class/net (UCX lists its TCP devices there).
#
#   cluster_start [NODES [CPUS]]  start NODES nodes (default 4) of CPUS CPUs (default 2); waits
#                                 until every node is idle; prints the seconds, or why not; sets
#                                 CLUSTER_DIR and CLUSTER_NETNS (so call it in this shell, not
#                                 in $(...))
#   cluster_run CMD...            CMD on the cluster's "login node": its namespaces, SLURM_CONF set
#   cluster_nodexec               the path of hydra's launcher: mpiexec -launcher rsh
#                                 -launcher-exec "$(cluster_nodexec)" -localhost "$CLUSTER_LOGIN_ADDR"
#                                 -hosts node1:2,node2:2 ...
#   cluster_stop                  cancel the jobs, stop the daemons, kill whatever is left in the
#                                 cluster's namespaces, remove its directory; prints the seconds
#                                 (call it in this shell too); does nothing when no cluster runs
#   cluster_stop_stale            stop the clusters whose starting shell is gone (a run killed
#                                 before it could stop its cluster)
#   cluster_leftovers             what of the last cluster survives (a process in its namespaces,
#                                 its directory), one line each; nothing when it is all gone
# Nothing outside is touched: no `ip netns add`, no edit of /etc, no interface in the root
# namespace; the namespaces vanish with their last process.

CLUSTER_DIR=
CLUSTER_NETNS=      # the login node's network namespace (every node's, without a shaped link)
CLUSTER_LOGIN_ADDR=127.0.0.1
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

# The namespaces whose processes are the cluster's: the login node's network namespace, and with
# a shaped link each node's; one per line in run/namespaces, so that a later run finds them.
cluster_namespaces() { cat "$CLUSTER_DIR/run/namespaces" 2>/dev/null || echo "$CLUSTER_NETNS"; }

cluster_start() {
  CLUSTER_NODES=${1:-4}
  local cpus=${2:-2} start=$SECONDS host h i np ipc="" rate=${CLUSTER_LINK_RATE:-}
  [[ ${CLUSTER_SEPARATE_IPC:-0} == 1 ]] && ipc=--ipc
  # Short: the pmi2 socket in a node's spool directory must fit in 108 bytes.
  CLUSTER_DIR=$(mktemp -d /tmp/mlps-cluster.XXXXXX) || return 1
  chmod 755 "$CLUSTER_DIR"  # munged wants every directory above its socket searchable
  mkdir -p "$CLUSTER_DIR"/{run,state,spool,log,key,bin}
  chmod 700 "$CLUSTER_DIR/key"
  echo "$$" >"$CLUSTER_DIR/run/owner.pid"  # the shell that must stop it (cluster_stop_stale)
  host=$(hostname -s 2>/dev/null || hostname)
  CLUSTER_LOGIN_ADDR=127.0.0.1
  [[ -n $rate ]] && CLUSTER_LOGIN_ADDR=10.77.0.1
  node_addr() { if [[ -n $rate ]]; then echo "10.77.0.1$1"; else echo 127.0.0.1; fi; }
  {
    echo "127.0.0.1 localhost"
    echo "$CLUSTER_LOGIN_ADDR $host"
    for ((i = 1; i <= CLUSTER_NODES; i++)); do echo "$(node_addr "$i") node$i"; done
  } >"$CLUSTER_DIR/hosts"

  # The holder: a sleep in a new network + mount namespace, in a session of its own so that it
  # outlives a caller's process-group signal until cluster_stop kills it.
  setsid unshare --net --mount --propagation private -- \
    sh -c "echo \$\$ >'$CLUSTER_DIR/run/holder.pid'; exec sleep infinity" \
    </dev/null >/dev/null 2>&1 &
  disown $!
  wait_until 10 cluster_holder >/dev/null || { echo "the namespace holder did not start"; return 1; }
  h=$(cluster_holder)
  CLUSTER_NETNS=$(readlink "/proc/$h/ns/net")
  echo "$CLUSTER_NETNS" >"$CLUSTER_DIR/run/namespaces"
  # A new namespace's loopback is down. Slurm resolves even "127.0.0.1" with AI_ADDRCONFIG,
  # which glibc answers only when an IPv4 address other than 127.0.0.1 exists: add 127.0.0.2
  # (or the bridge's address).
  local net="ip addr add 127.0.0.2/8 dev lo"
  [[ -n $rate ]] && net="ip link add br0 type bridge && ip addr add 10.77.0.1/24 dev br0 &&
    ip link set br0 up"
  nsenter -t "$h" -n -m -- sh -c "ip link set lo up && $net &&
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
  {
    cat <<CONF
ClusterName=mlpscluster
SlurmctldHost=$host($CLUSTER_LOGIN_ADDR)
SlurmctldPort=$CLUSTER_CTLD_PORT
AuthInfo=socket=$CLUSTER_DIR/run/munge.sock
StateSaveLocation=$CLUSTER_DIR/state
SlurmdSpoolDir=$CLUSTER_DIR/spool/%n
SlurmctldPidFile=$CLUSTER_DIR/run/slurmctld.pid
SlurmdPidFile=$CLUSTER_DIR/run/slurmd-%n.pid
SlurmctldLogFile=$CLUSTER_DIR/log/slurmctld.log
SlurmdLogFile=$CLUSTER_DIR/log/slurmd-%n.log
CONF
    slurm_conf_settings
    # One "machine" license: jobs that ask for it (jobs/site/local-cluster.env) run one at a
    # time, since every node's CPUs are this one machine's cores.
    echo "Licenses=machine:1"
    for ((i = 1; i <= CLUSTER_NODES; i++)); do
      echo "NodeName=node$i NodeHostname=node$i NodeAddr=$(node_addr "$i")" \
        "Port=$((CLUSTER_SLURMD_PORT + i - 1)) CPUs=$cpus RealMemory=1000 State=UNKNOWN"
    done
    echo "PartitionName=cluster Nodes=node[1-$CLUSTER_NODES] Default=YES MaxTime=INFINITE" \
      "State=UP OverSubscribe=YES"
  } >"$CLUSTER_DIR/slurm.conf"
  setsid nsenter -t "$h" -n -m -- slurmctld -D -f "$CLUSTER_DIR/slurm.conf" \
    </dev/null >"$CLUSTER_DIR/log/slurmctld.out" 2>&1 &
  disown $!
  # unshare, never `ip netns exec`: that remounts /sys, and slurmd's cgroup set-up then fails.
  for ((i = 1; i <= CLUSTER_NODES; i++)); do
    mkdir -p "$CLUSTER_DIR/spool/node$i"
    if [[ -z $rate ]]; then
      setsid nsenter -t "$h" -n -m -- unshare --uts $ipc -- \
        sh -c "hostname node$i && exec slurmd -D -f '$CLUSTER_DIR/slurm.conf' -N node$i" \
        </dev/null >"$CLUSTER_DIR/log/slurmd-node$i.out" 2>&1 &
      disown $!  # this shell need not hear of them: cluster_stop ends them
      continue
    fi
    # The node's holder, in namespaces of its own made from the login node's (so its mounts
    # include the bound /etc/hosts); its veth's far end on the bridge; its egress shaped.
    setsid nsenter -t "$h" -n -m -- unshare --net --uts --ipc --mount --propagation private -- \
      sh -c "echo \$\$ >'$CLUSTER_DIR/run/node$i.pid'; exec sleep infinity" \
      </dev/null >/dev/null 2>&1 &
    disown $!
    wait_until 10 cluster_pid "node$i" >/dev/null || { echo "node$i's holder did not start"; return 1; }
    np=$(cluster_pid "node$i")
    wait_until 10 test "$(readlink "/proc/$np/ns/net")" != "$CLUSTER_NETNS"
    readlink "/proc/$np/ns/net" >>"$CLUSTER_DIR/run/namespaces"
    mkdir -p "$CLUSTER_DIR/sys/node$i"
    # UCX lists its TCP devices in /sys/class/net: a sysfs mounted in the node's own network
    # namespace shows its eth0 there (replacing all of /sys would hide the cgroups slurmd needs).
    if ! nsenter -t "$h" -n -- ip link add "vh$i" type veth peer name eth0 netns "$np" ||
      ! nsenter -t "$h" -n -- ip link set "vh$i" master br0 up ||
      ! nsenter -t "$np" -n -u -m -- sh -c "hostname node$i && ip link set lo up &&
          ip addr add $(node_addr "$i")/24 dev eth0 && ip link set eth0 up &&
          tc qdisc add dev eth0 root tbf rate $rate burst 256kb latency 50ms &&
          mount -t sysfs sysfs '$CLUSTER_DIR/sys/node$i' &&
          mount --bind '$CLUSTER_DIR/sys/node$i/class/net' /sys/class/net"; then
      echo "could not give node$i its network (shaped to $rate)"
      return 1
    fi
    setsid nsenter -t "$np" -n -u -i -m --wd=/ -- slurmd -D -f "$CLUSTER_DIR/slurm.conf" -N "node$i" \
      </dev/null >"$CLUSTER_DIR/log/slurmd-node$i.out" 2>&1 &
    disown $!
  done
  # hydra's rsh-style launcher: "nodexec HOST COMMAND-LINE" in HOST's namespaces (those of its
  # slurmd), in the caller's directory. Hydra quotes the proxy's path as for a remote shell:
  # sh -c "$*".
  cat >"$CLUSTER_DIR/bin/nodexec" <<WRAP
#!/bin/sh
pid=\$(cat "$CLUSTER_DIR/run/slurmd-\$1.pid") || exit 255
shift; exec nsenter -t "\$pid" -n -m -u -i --wd="\$PWD" -- /bin/sh -c "\$*"
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

# in_cluster PID: whether PID's network namespace is one of the cluster's ($CLUSTER_NAMESPACES).
in_cluster() {
  local ns known
  ns=$(readlink "/proc/$1/ns/net" 2>/dev/null) || return 1
  while IFS= read -r known; do
    [[ $ns == "$known" ]] && return 0
  done <<<"$CLUSTER_NAMESPACES"
  return 1
}

cluster_stop() {
  [[ -n $CLUSTER_DIR && -d $CLUSTER_DIR ]] || return 0
  local start=$SECONDS h pid name p
  CLUSTER_NAMESPACES=$(cluster_namespaces)
  if h=$(cluster_holder); then
    cluster_run scancel --user=root 2>/dev/null
    cluster_jobs_gone() { [[ -z $(cluster_run squeue -h -o %i 2>/dev/null) ]]; }
    wait_until 20 cluster_jobs_gone
    # The daemons in reverse order of their start: TERM, then KILL after 10 s. A PID file whose
    # process is outside the cluster's namespaces is stale and left alone.
    local group pids
    for group in "$(cd "$CLUSTER_DIR/run" && ls slurmd-*.pid 2>/dev/null | sed 's/\.pid$//')" \
      slurmctld munged; do
      pids=()
      for name in $group; do
        pid=$(cluster_pid "$name") || continue
        in_cluster "$pid" && pids+=("$pid")
      done
      ((${#pids[@]})) || continue
      kill -TERM "${pids[@]}" 2>/dev/null
      for pid in "${pids[@]}"; do wait_until 10 process_gone "$pid" || kill -KILL "$pid" 2>/dev/null; done
    done
    # Whatever is left in the namespaces is the cluster's (steps, ranks of a killed job, the
    # nodes' holders), the login node's holder last: cluster_holder made sure it is not this
    # shell's namespace.
    for p in /proc/[0-9]*; do
      pid=${p#/proc/}
      [[ $pid != "$h" ]] && in_cluster "$pid" && kill -KILL "$pid" 2>/dev/null
    done
    kill -KILL "$h" 2>/dev/null
    wait_until 10 process_gone "$h"
  fi
  rm -rf "$CLUSTER_DIR"
  echo "$((SECONDS - start))"
}

# Two ways, so that a fault in one is caught by the other: by namespace, and by the cluster's
# directory on a command line (every daemon names its configuration or key there).
cluster_leftovers() {
  local p cmdline
  [[ -n $CLUSTER_DIR && -e $CLUSTER_DIR ]] && echo "directory $CLUSTER_DIR"
  for p in /proc/[0-9]*; do
    cmdline=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
    if [[ -n ${CLUSTER_NAMESPACES:-} ]] && in_cluster "${p#/proc/}"; then
      echo "process ${p#/proc/} in the cluster's namespaces: ${cmdline:0:60}"
    elif [[ -n $CLUSTER_DIR && $cmdline == *"$CLUSTER_DIR"* && ${p#/proc/} != "$$" ]]; then
      echo "process ${p#/proc/} names the cluster's directory: ${cmdline:0:60}"
    fi
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
