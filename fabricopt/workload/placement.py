"""Ranks of a training job mapped to the fabric's GPUs.

The default is the usual order (Megatron-LM's): tensor-parallel ranks fastest, so a tensor
group is consecutive GPUs of the fabric (one server when ``tp`` divides its GPU count), then
context, expert, data and pipeline. Rank ``r`` runs on the ``r``-th GPU of the placement.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._checks import check_node_names
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..graph_arrays import FabricShape, GraphArrays
from .plan import DIMENSIONS, TrainingJob


@dataclass
class Placement:
    """Where every rank runs.

    ``gpus[r]`` is the GPU of rank ``r``; ``grid`` holds rank numbers with axes ``(pp, dp,
    ep, cp, tp)``; ``domain[r]`` is the scale-up domain of rank ``r``'s GPU; ``notes`` says
    what the plan leaves idle or stretches across domains.
    """

    gpus: tuple[Hashable, ...]
    grid: np.ndarray
    domain: np.ndarray
    notes: list[str] = field(default_factory=list)

    def groups(self, dims: Sequence[str]) -> np.ndarray:
        """Ranks of every group of the dimensions ``dims``: one row per group (the ranks that
        differ only in those coordinates).

        >>> import fabricopt as fo
        >>> job = fo.TrainingJob("llama3-8b", tp=2, dp=2, global_batch=4)
        >>> place_ranks(fo.dgx_h100(), job).groups(["dp"]).tolist()
        [[0, 2], [1, 3]]
        """
        axes = [("pp", "dp", "ep", "cp", "tp").index(d) for d in dims]
        rest = [a for a in range(5) if a not in axes]
        moved = np.transpose(self.grid, rest + axes)
        return moved.reshape(-1, int(np.prod([self.grid.shape[a] for a in axes])))


def scale_up_domains(fab: Fabric, ga: GraphArrays, gpus: Sequence[Hashable]) -> np.ndarray:
    """The scale-up domain (an integer label) of each of ``gpus``: GPUs joined by NVLink or
    UALink links, through their switches (:attr:`FabricShape.domain
    <fabricopt.graph_arrays.FabricShape>`)."""
    shape = FabricShape.of(fab, ga)
    index = shape.arrays.index
    return shape.domain[np.array([index[g] for g in gpus], dtype=np.int64)]


def place_ranks(fab: Fabric, job: TrainingJob, placement: Sequence[Hashable] | None = None,
                ga: GraphArrays | None = None,
                domain_of_node: np.ndarray | None = None) -> Placement:
    """Map ``job``'s ranks (``dp`` set) to ``fab``'s GPUs, in ``placement`` order if given.

    ``domain_of_node`` (per node of ``ga``, the scale-up domain) saves finding the domains
    again when the caller has them.

    Raises
    ------
    InvalidParameterError
        When ``placement`` names unknown or repeated GPUs or too few of them.
    """
    func = "training_step"
    world = job.gpus
    if placement is None:
        gpus = tuple(fab.endpoints)[:world]
    else:
        if isinstance(placement, str | bytes) or not isinstance(placement, Sequence | np.ndarray):
            raise InvalidParameterError(f"{func}(): placement must be a sequence of GPU "
                                        f"names, one per rank, got {placement!r}")
        gpus = check_node_names(func, "placement", placement)
        known = set(fab.endpoints)
        unknown = [g for g in gpus if g not in known]
        if unknown:
            raise InvalidParameterError(f"{func}(): placement names {unknown[0]!r}, not a GPU "
                                        f"of {fab.name}")
        if len(set(gpus)) != len(gpus):
            raise InvalidParameterError(f"{func}(): placement repeats a GPU")
        if len(gpus) != world:
            raise InvalidParameterError(f"{func}(): placement must name one GPU per rank "
                                        f"({world}), got {len(gpus)}")
    ga = GraphArrays.from_fabric(fab) if ga is None else ga
    shape = tuple(getattr(job, d) if d != "dp" else job.dp for d in reversed(DIMENSIONS))
    grid = np.arange(world).reshape(shape)
    if domain_of_node is None:
        domain = scale_up_domains(fab, ga, gpus)
    else:
        domain = domain_of_node[[ga.index[g] for g in gpus]]
    result = Placement(gpus, grid, domain)
    idle = len(fab.endpoints) - world
    if idle:
        result.notes.append(f"the plan takes {world:,} of the {len(fab.endpoints):,} GPUs; "
                            f"{idle:,} stay idle (tp x cp x ep x dp x pp does not fill the "
                            "fabric)")
    if job.tp > 1:
        spread = [len(np.unique(domain[g])) for g in result.groups(["tp"])]
        if max(spread) > 1:
            result.notes.append(f"tensor parallelism crosses scale-up domains: a tp group "
                                f"spans up to {max(spread)} domains, so its traffic runs over "
                                "the scale-out network")
    return result


__all__ = ["Placement", "place_ranks", "scale_up_domains"]
