"""tf.distribute.cluster_resolver: where a task stands in its cluster,
read from TF_CONFIG (MultiWorkerMirroredStrategy's transport is MPI, so
the addresses are only recorded: mpirun starts and connects the tasks)."""
import json
import os

__all__ = ["ClusterSpec", "TFConfigClusterResolver", "ClusterResolver"]


class ClusterSpec:
    """tf.train.ClusterSpec's reading side: job name -> task addresses."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        self._jobs = {}
        for job, tasks in dict(cluster or {}).items():
            if isinstance(tasks, dict):
                self._jobs[job] = {int(i): a for i, a in tasks.items()}
            else:
                self._jobs[job] = dict(enumerate(tasks))

    def as_dict(self):
        return {job: [tasks[i] for i in sorted(tasks)]
                for job, tasks in self._jobs.items()}

    @property
    def jobs(self):
        return list(self._jobs)

    def num_tasks(self, job_name):
        if job_name not in self._jobs:
            raise ValueError(f"No such job in cluster: {job_name!r}")
        return len(self._jobs[job_name])

    def task_indices(self, job_name):
        return sorted(self._jobs[job_name]) if job_name in self._jobs \
            else self.num_tasks(job_name)

    def task_address(self, job_name, task_index):
        try:
            return self._jobs[job_name][task_index]
        except KeyError:
            raise ValueError(f"No task {task_index} in job "
                             f"{job_name!r}") from None

    def __bool__(self):
        return bool(self._jobs)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and \
            self.as_dict() == other.as_dict()

    def __repr__(self):
        return f"ClusterSpec({self.as_dict()!r})"


class ClusterResolver:
    """The base of cluster resolvers."""

    task_type = None
    task_id = None
    rpc_layer = None

    def cluster_spec(self):
        raise NotImplementedError

    def num_accelerators(self, task_type=None, task_id=None,
                         config_proto=None):
        return {}


class TFConfigClusterResolver(ClusterResolver):
    """The cluster, task type and index of the TF_CONFIG environment
    variable (tf.distribute.cluster_resolver.TFConfigClusterResolver)."""

    def __init__(self, task_type=None, task_id=None, rpc_layer=None,
                 environment=None):
        raw = os.environ.get("TF_CONFIG") or "{}"
        try:
            cfg = json.loads(raw)
        except ValueError as e:
            raise ValueError(f"TF_CONFIG is not valid JSON: {e}") from None
        task = cfg.get("task") or {}
        self._cluster = cfg.get("cluster") or {}
        self.task_type = task_type if task_type is not None else \
            task.get("type")
        self.task_id = task_id if task_id is not None else \
            (int(task["index"]) if "index" in task else None)
        self.rpc_layer = rpc_layer if rpc_layer is not None else \
            cfg.get("rpc_layer")
        self.environment = environment if environment is not None else \
            cfg.get("environment", "")

    def cluster_spec(self):
        return ClusterSpec(self._cluster)

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if task_type is None or task_id is None:
            return ""
        address = self.cluster_spec().task_address(task_type, task_id)
        layer = rpc_layer or self.rpc_layer
        return f"{layer}://{address}" if layer else address
