"""tf.train.ClusterSpec: the jobs of a cluster and their tasks'
addresses, as multi-worker code passes them around (TF_CONFIG's
"cluster"). Pure data: tfmini's strategies run in one process, and
nothing here starts a server."""


class ClusterSpec:
    """{job name: [address, ...]} or {job name: {task index: address}}."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, dict):
            # (TF also takes a ClusterDef protocol buffer; tfmini not.)
            raise TypeError("`cluster` must be a dictionary mapping one or "
                            "more job names to lists of network addresses, "
                            "or a ClusterSpec")
        self._jobs = {}
        for job, tasks in cluster.items():
            if isinstance(tasks, (list, tuple)):
                tasks = dict(enumerate(tasks))
            elif not isinstance(tasks, dict) or not all(
                    isinstance(i, int) for i in tasks):
                raise TypeError(f"The tasks for job {job!r} must be a list "
                                f"or a dictionary from integers to "
                                f"strings.")
            self._jobs[job] = {int(i): str(a) for i, a in tasks.items()}

    def __bool__(self):
        return bool(self._jobs)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return f"ClusterSpec({self._repr_dict()!r})"

    def _repr_dict(self):
        return {job: self._tasks_value(job) for job in sorted(self._jobs)}

    def _tasks_value(self, job):
        """A list where the indices are 0..n-1, else the {index: address}
        dict (sorted)."""
        tasks = self._jobs[job]
        if sorted(tasks) == list(range(len(tasks))):
            return [tasks[i] for i in range(len(tasks))]
        return {i: tasks[i] for i in sorted(tasks)}

    def as_dict(self):
        return {job: self._tasks_value(job) for job in self._jobs}

    @property
    def jobs(self):
        return list(self._jobs)

    def _job(self, job_name):
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") \
                from None

    def num_tasks(self, job_name):
        return len(self._job(job_name))

    def task_indices(self, job_name):
        return sorted(self._job(job_name))

    def task_address(self, job_name, task_index):
        tasks = self._job(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index} in job "
                             f"{job_name!r}") from None

    def job_tasks(self, job_name):
        """Addresses by task index; None where an index has no task."""
        tasks = self._job(job_name)
        if not tasks:
            return []
        return [tasks.get(i) for i in range(max(tasks) + 1)]
