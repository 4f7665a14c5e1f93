"""weft._weft.launch_info and get_node_local_rank read what each launcher sets, torch's names
first (new_subgroups() reads its ranks per node from the same place). Each case runs in a fresh
interpreter with exactly the variables given."""

import json
import os
import subprocess
import sys

PROBE = """
import json, sys
import weft._weft as w
import weft.distributed as dist
out = {"info": w.launch_info()}
try:
    out["local"] = dist.get_node_local_rank()
except RuntimeError as error:
    out["local"] = str(error)
out["fallback"] = dist.get_node_local_rank(fallback_rank=7)
print(json.dumps(out))
"""

LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                      "MASTER_PORT", "WEFT_STORE_ADDR", "TORCHELASTIC_USE_AGENT_STORE")


def _probe(variables):
    environment = {name: value for name, value in os.environ.items()
                   if name not in LAUNCHER_VARIABLES and not name.startswith(
                       ("OMPI_", "PMI_", "PMIX_", "SLURM_", "MPI_LOCAL"))}
    environment.update(variables)
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                            env=environment, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_torch_names_come_first():
    out = _probe({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
                  "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "SLURM_PROCID": "0",
                  "SLURM_LOCALID": "0", "SLURM_NTASKS": "4"})
    info = out["info"]
    assert (info["rank"], info["world_size"], info["local_rank"], info["local_world_size"]) == \
        (3, 4, 1, 2)
    assert (info["master_addr"], info["master_port"]) == ("10.0.0.1", 29500)
    assert out["local"] == 1 and out["fallback"] == 1


def test_open_mpi_on_one_node():
    out = _probe({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "3",
                  "OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "3",
                  "OMPI_MCA_ess_base_jobid": "1234567"})
    info = out["info"]
    assert info["launcher"] == "Open MPI"
    assert (info["rank"], info["world_size"], info["local_rank"], info["local_world_size"]) == \
        (2, 3, 2, 3)
    assert info["master_addr"] == "127.0.0.1"
    assert 20000 <= info["master_port"] < 32768
    assert out["local"] == 2


def test_slurm_local_rank():
    out = _probe({"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1",
                  "SLURM_NODEID": "1", "SLURM_TASKS_PER_NODE": "4(x2)",
                  "SLURM_JOB_NODELIST": "node[01-02]", "SLURM_JOB_ID": "4242"})
    info = out["info"]
    assert info["launcher"] == "Slurm"
    assert (info["rank"], info["local_rank"], info["local_world_size"]) == (5, 1, 4)
    assert info["master_addr"] == "node01"
    assert out["local"] == 1


def test_no_launcher_needs_the_fallback():
    out = _probe({})
    assert out["info"]["local_rank"] is None and out["info"]["rank"] is None
    assert "fallback_rank" in out["local"]
    assert out["fallback"] == 7


def test_a_malformed_variable_is_an_error_naming_it():
    environment = dict(os.environ, LOCAL_RANK="one")
    result = subprocess.run([sys.executable, "-c", "import weft._weft as w; w.launch_info()"],
                            capture_output=True, text=True, env=environment, timeout=60)
    assert result.returncode != 0
    assert "LOCAL_RANK" in result.stderr
