#ifndef FLOWRUN_HOST_H
#define FLOWRUN_HOST_H

/// How many CPUs this process may run on: its affinity mask (taskset, a
/// cgroup cpuset, Slurm's binding), which CPU_COUNT — a macro Swift cannot
/// import — counts. 0 if the mask cannot be read.
int flowrun_affinity_cpu_count(void);

#endif
