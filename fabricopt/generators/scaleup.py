"""Scale-up domains: GPUs joined by NVSwitch chips (NVLink) or UALink switches.

A scale-up domain is a one-level switched network: every GPU sends a bundle of links to every
switch chip, and the chips are not linked to each other. Two-level NVLink systems add a second
layer of NVLink switches above the first (tier ``"nvswitch-l2"``).

Sources for the hardware figures are cited in each docstring with a status: V = read in a primary
or vendor source, V2 = read in a secondary source, R = background knowledge not yet checked
against a source, D = derived by arithmetic. Units: Gb/s per direction per link, as everywhere in
fabricopt; NVIDIA quotes NVLink in GB/s, often bidirectional (1 GB/s = 8 Gb/s).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .._checks import (
    check_bool,
    check_choice,
    check_int,
    check_int_sequence,
    check_label,
    check_positive,
    check_size,
    fail,
)
from ..fabric import Fabric
from ._builder import FabricBuilder, defaults_of, with_options

#: UALink 200G 1.0: most accelerators in one pod (10-bit routing identifiers).
UALINK_MAX_ACCELERATORS = 1024

_NVLINK_TECH = {200.0: "nvlink4", 400.0: "nvlink5"}


def even_split(total: int, parts: int) -> tuple[int, ...]:
    """Split ``total`` links over ``parts`` switches as evenly as possible.

    Every switch gets ``total // parts`` links; the ``total % parts`` extra links go to the
    switches at the two ends first, alternating: 0, ``parts - 1``, 1, ``parts - 2``, ... This
    reproduces the DGX H100 split of 18 links over 4 NVSwitches, 5/4/4/5.

    >>> even_split(18, 4), even_split(18, 2), even_split(7, 5)
    ((5, 4, 4, 5), (9, 9), (2, 1, 1, 1, 2))
    """
    base, extra = divmod(total, parts)
    split = [base] * parts
    order = [j for pair in zip(range(parts), range(parts - 1, -1, -1), strict=True)
             for j in pair]
    for j in list(dict.fromkeys(order))[:extra]:
        split[j] += 1
    return tuple(split)


def _resolve_split(func: str, split: Sequence[int] | None, switches: int,
                   links_per_gpu: int) -> tuple[int, ...]:
    """The per-switch link counts of one GPU, checked against ``switches`` and the total."""
    if split is None:
        if links_per_gpu < switches:
            raise fail(func, "links_per_gpu", f"an integer >= switches ({switches}) so that "
                       "every switch gets a link", links_per_gpu)
        return even_split(links_per_gpu, switches)
    split = check_int_sequence(func, "link_split", split, minimum=1, length=switches)
    if sum(split) != links_per_gpu:
        raise fail(func, "link_split", f"a sequence summing to links_per_gpu "
                   f"({links_per_gpu})", list(split))
    return split


def _nvlink_tech(link_gbps: float) -> str:
    # A scale-up link at a rate no NVLink generation has: a generic label, never a network
    # technology (which would make it a scale-out link).
    return _NVLINK_TECH.get(link_gbps, f"{link_gbps:g}g")


def _one_level(func: str, gpus: int, split: tuple[int, ...], link_gbps: float, tier: str,
               tech: str, name: str, params: dict[str, Any], switch_radix: int | None,
               switch_model: str | None, reduce: bool, gpu_name: str, switch_name: str,
               gpu_attrs: Any = None, switch_attrs: Any = None) -> Fabric:
    """Build GPUs joined to switches by one bundle per pair; claim the symmetric-group orbits."""
    for j, k in enumerate(split):
        if switch_radix is not None and gpus * k > switch_radix:
            raise fail(func, "switch_radix", f"at least the {gpus * k} ports switch {j} uses "
                       f"({gpus} GPUs x {k} links)", switch_radix)
    b = FabricBuilder(name, params)
    gpu_ids = [b.gpu(f"{gpu_name}{i}", **(gpu_attrs(i) if gpu_attrs else {}))
               for i in range(gpus)]
    sw_ids = [b.switch(f"{switch_name}{j}", layer=1,
                       radix=switch_radix if switch_radix is not None else gpus * k,
                       model=switch_model, reduce=reduce,
                       **(switch_attrs(j) if switch_attrs else {}))
              for j, k in enumerate(split)]
    for g in gpu_ids:
        for s, k in zip(sw_ids, split, strict=True):
            # Switches with equal link counts are interchangeable, so they share an orbit.
            b.link(g, s, link_gbps, tier, tech, links=k, orbit=f"{tier}:{k}")
    return b.build(symmetric=True, group="GPU permutations x permutations of switches with "
                   "equal link counts")


def nvswitch_domain(gpus: int, switches: int, links_per_gpu: int, link_gbps: float,
                    link_split: Sequence[int] | None = None, in_network_reduction: bool = True,
                    name: str | None = None, switch_radix: int | None = None,
                    switch_model: str | None = None, tech: str | None = None,
                    gpu_model: str | None = None) -> Fabric:
    """GPUs joined by NVSwitch chips: each GPU sends a bundle of NVLinks to every chip.

    Parameters
    ----------
    gpus : int
        Number of GPUs, >= 2.
    switches : int
        Number of NVSwitch chips, >= 1.
    links_per_gpu : int
        NVLinks per GPU, >= 1.
    link_gbps : float
        Capacity of one NVLink per direction (Gb/s): 200 for NVLink 4, 400 for NVLink 5.
    link_split : sequence of int, optional
        ``link_split[j]`` is how many of EACH GPU's links go to switch ``j``: one entry >= 1
        per switch, summing to ``links_per_gpu``. By default as even as possible (see
        :func:`even_split`: extra links go to the end switches first, alternating), which needs
        ``links_per_gpu >= switches``.
    in_network_reduction : bool
        Whether the chips reduce in the network (NVLink SHARP); sets the switches' ``reduce``.
    name : str, optional
        Name of the fabric.
    switch_radix : int, optional
        Ports per chip. By default the ports the GPUs use. A split that puts more links on a
        chip than its radix raises :class:`~fabricopt.InvalidParameterError` here, before
        building (a fabric edited afterwards is caught by :meth:`Fabric.validate`).
    switch_model : str, optional
        Catalog key of the chip (e.g. ``"nvswitch3"``).
    tech : str, optional
        Link technology label. By default ``"nvlink4"`` for 200 Gb/s, ``"nvlink5"`` for
        400 Gb/s, else ``"{rate}g"``.
    gpu_model : str, optional
        Catalog key of the GPUs (e.g. ``"h100_sxm"``), set as their ``gpu_model`` attribute:
        a training job on the fabric then takes that GPU's figures.

    Returns
    -------
    Fabric
        ``gpus + switches`` nodes and ``gpus * switches`` GPU-switch bundles (tier
        ``"gpu-nvswitch"``); each GPU injects ``links_per_gpu * link_gbps`` Gb/s per direction.

    Notes
    -----
    GPUs are ``"gpu0" .. "gpu{gpus-1}"`` (role ``gpu``, layer 0, ``node=0``, ``rail=i`` so a
    cluster can rail-align them, and ``gpu_model`` when given); switches are ``"nvsw0" ..``
    (role ``switch``, layer 1, ``radix``, ``model``, ``reduce``). A GPU-switch pair is one
    bundle: arc ``capacity`` is ``link_split[j] * link_gbps``, ``links`` is
    ``link_split[j]``.

    Symmetry: any permutation of the GPUs, together with any permutation of switches that
    carry the same link count, is an automorphism; it acts transitively on the GPUs. Its arc
    orbits are labelled by link count and direction (``"gpu-nvswitch:5:up"``), so a 5/4/4/5
    split has four arc orbits.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.nvswitch_domain(gpus=8, switches=4, links_per_gpu=18, link_gbps=200)
    >>> fab.params["link_split"], fab.injection_gbps("gpu0")
    ([5, 4, 4, 5], 3600.0)
    """
    func = "nvswitch_domain"
    gpus = check_int(func, "gpus", gpus, minimum=2)
    switches = check_int(func, "switches", switches, minimum=1)
    links_per_gpu = check_int(func, "links_per_gpu", links_per_gpu, minimum=1)
    check_size(func, gpus + switches, gpus * switches)
    link_gbps = check_positive(func, "link_gbps", link_gbps)
    split = _resolve_split(func, link_split, switches, links_per_gpu)
    in_network_reduction = check_bool(func, "in_network_reduction", in_network_reduction)
    if switch_radix is not None:
        switch_radix = check_int(func, "switch_radix", switch_radix, minimum=1)
    tech = check_label(func, "tech", tech)
    switch_model = check_label(func, "switch_model", switch_model)
    gpu_model = check_label(func, "gpu_model", gpu_model)
    name = check_label(func, "name", name)
    params = {"gpus": gpus, "switches": switches, "links_per_gpu": links_per_gpu,
              "link_gbps": link_gbps, "link_split": list(split),
              "in_network_reduction": in_network_reduction, "switch_radix": switch_radix,
              "switch_model": switch_model}
    if gpu_model is not None:
        params["gpu_model"] = gpu_model
    named = {} if gpu_model is None else {"gpu_model": gpu_model}
    return _one_level(
        func, gpus, split, link_gbps, "gpu-nvswitch", tech or _nvlink_tech(link_gbps),
        name or with_options(f"nvswitch_domain({gpus} GPUs, {switches} switches)", {
            "links_per_gpu": links_per_gpu, "link_gbps": link_gbps, "link_split": link_split,
            "in_network_reduction": in_network_reduction, "switch_radix": switch_radix,
            "switch_model": switch_model, "tech": tech, "gpu_model": gpu_model},
            defaults_of(nvswitch_domain)), params, switch_radix,
        switch_model, in_network_reduction, "gpu", "nvsw",
        gpu_attrs=lambda i: {"node": 0, "rail": i, **named})


def dgx_h100(in_network_reduction: bool = True, name: str | None = None) -> Fabric:
    """One DGX H100 / HGX H100 node: 8 H100 GPUs on 4 third-generation NVSwitch chips.

    Each GPU has 18 NVLink 4 links (V: NVIDIA Hopper architecture page, "18x NVLink
    connections per GPU, 900GB/s"), split 5/4/4/5 over the 4 NVSwitches (V2: Hot Chips 34
    NVSwitch slides). One NVLink 4 link carries 25 GB/s = 200 Gb/s per direction (V2), so a GPU
    injects 18 x 200 = 3600 Gb/s = 450 GB/s per direction (V: 900 GB/s bidirectional). The
    NVSwitch gen 3 chip has 64 NVLink 4 ports (V2: NVIDIA via PC Gamer, March 2022): catalog
    model ``"nvswitch3"``, radix 64, of which the GPUs use 40 or 32. The chips do NVLink SHARP
    reductions (V: NVIDIA "third-generation NVSwitch" blog), within one node on HGX H100
    (V: NCCL issue 1031).

    Not modelled: the 72 off-node NVLink ports (20/16/16/20 per chip) that feed the NVLink
    Switch System; :func:`nvlink_switch_system` joins nodes through them.

    The GPUs carry ``gpu_model="h100_sxm"`` (the catalog's H100 SXM), so a training job on
    the node, or on a cluster of them, takes the H100's figures.

    Parameters
    ----------
    in_network_reduction : bool
        Sets the switches' ``reduce`` (NVLink SHARP).
    name : str, optional
        Name of the fabric, default ``"DGX H100"``.

    Returns
    -------
    Fabric
        See :func:`nvswitch_domain` for nodes, attributes and the symmetry claim; ``params``
        holds the :func:`nvswitch_domain` arguments it was built from.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.dgx_h100()
    >>> len(fab.endpoints), len(fab.switches), fab.injection_gbps("gpu0")
    (8, 4, 3600.0)
    """
    name = check_label("dgx_h100", "name", name)
    in_network_reduction = check_bool("dgx_h100", "in_network_reduction", in_network_reduction)
    return nvswitch_domain(gpus=8, switches=4, links_per_gpu=18, link_gbps=200.0,
                           link_split=(5, 4, 4, 5), in_network_reduction=in_network_reduction,
                           name=name or with_options("DGX H100", {
                               "in_network_reduction": in_network_reduction},
                               defaults_of(dgx_h100)), switch_radix=64, switch_model="nvswitch3",
                           tech="nvlink4", gpu_model="h100_sxm")


#: The A100 variants a DGX A100 / HGX A100 carries (catalog keys).
A100_MODELS = ("a100_sxm_80gb", "a100_sxm_40gb")


def dgx_a100(gpu: str = "a100_sxm_80gb", name: str | None = None) -> Fabric:
    """One DGX A100 / HGX A100 8-GPU node: 8 A100 GPUs on 6 second-generation NVSwitch chips.

    Each A100 has 12 third-generation NVLinks of 25 GB/s = 200 Gb/s per direction (V: NVIDIA
    A100 Tensor Core GPU architecture white paper; an NCCL maintainer in NVIDIA/nccl-tests
    issue 149), 300 GB/s = 2400 Gb/s per direction per GPU (V: A100 datasheet, "600 GB/s"
    bidirectional). The node has 6 NVSwitch gen 2 chips (V: DGX A100 system architecture white
    paper) and every GPU sends 2 links to each (V: the DGX A100 topology NCCL reads, 6 NVLink
    targets of count 2 per GPU, in NVIDIA/nccl issue 1505), 600 GB/s between any two GPUs.
    The NVSwitch gen 2 chip has 36 NVLink 3 ports (V2): catalog model ``"nvswitch2"``, radix
    36, of which the GPUs use 16. It does no in-network reduction (NVLink SHARP came with the
    third generation, V: NVIDIA third-generation NVSwitch blog), so ``reduce=False``.

    Links are tech ``"nvlink3"``: the collective bounds' expected figure then takes the
    NVLink 3 efficiency profile (about 230 GB/s all-reduce busbw on 8 A100, V: NCCL maintainer,
    nccl-tests issue 149). The GPUs carry ``gpu_model=gpu``.

    Parameters
    ----------
    gpu : {"a100_sxm_80gb", "a100_sxm_40gb"}
        The A100 variant (catalog key), set as the GPUs' ``gpu_model``: the DGX A100 640 GB
        (80 GB GPUs) by default, or the 320 GB system.
    name : str, optional
        Name of the fabric, default ``"DGX A100"``.

    Returns
    -------
    Fabric
        See :func:`nvswitch_domain` for nodes, attributes and the symmetry claim (one
        GPU-switch orbit each way: every chip takes 2 links from every GPU).

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.dgx_a100()
    >>> len(fab.endpoints), len(fab.switches), fab.injection_gbps("gpu0")
    (8, 6, 2400.0)
    >>> fab.graph.nodes["gpu0"]["gpu_model"], fab.graph["gpu0"]["nvsw0"]["tech"]
    ('a100_sxm_80gb', 'nvlink3')
    """
    func = "dgx_a100"
    gpu = check_choice(func, "gpu", gpu, A100_MODELS)
    name = check_label(func, "name", name)
    return nvswitch_domain(gpus=8, switches=6, links_per_gpu=12, link_gbps=200.0,
                           link_split=(2,) * 6, in_network_reduction=False,
                           name=name or with_options("DGX A100", {"gpu": gpu},
                                                     defaults_of(dgx_a100)),
                           switch_radix=36, switch_model="nvswitch2",
                           tech="nvlink3", gpu_model=gpu)


def hgx_h800(in_network_reduction: bool = True, name: str | None = None) -> Fabric:
    """One HGX H800 8-GPU node: 8 H800 GPUs on 4 third-generation NVSwitch chips.

    The H800 is the H100 SXM with its NVLink cut to 400 GB/s bidirectional (V2: DeepSeek,
    "Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware for AI
    Architectures", and trade-press coverage of the launch), 200 GB/s = 1600 Gb/s per
    direction: 8 NVLink 4 links of 25 GB/s = 200 Gb/s per direction (D: 400 / 2 / 25). The
    baseboard is the HGX H100's, 4 NVSwitch gen 3 chips of 64 ports (catalog ``"nvswitch3"``);
    every GPU sends 2 links to each chip (R: 8 links spread evenly over 4 chips, not read in a
    source). NVLink SHARP runs on it (V2: an 8 x H800 all-reduce busbw of 215 GB/s, above the
    200 GB/s per direction a ring can reach, in NVIDIA/nccl issue 1374). The GPUs carry
    ``gpu_model="h800_sxm"``.

    Parameters
    ----------
    in_network_reduction : bool
        Sets the switches' ``reduce`` (NVLink SHARP).
    name : str, optional
        Name of the fabric, default ``"HGX H800"``.

    Returns
    -------
    Fabric
        See :func:`nvswitch_domain` (one GPU-switch orbit each way).

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.hgx_h800()
    >>> len(fab.endpoints), len(fab.switches), fab.injection_gbps("gpu0")
    (8, 4, 1600.0)
    """
    func = "hgx_h800"
    in_network_reduction = check_bool(func, "in_network_reduction", in_network_reduction)
    name = check_label(func, "name", name)
    return nvswitch_domain(gpus=8, switches=4, links_per_gpu=8, link_gbps=200.0,
                           link_split=(2, 2, 2, 2), in_network_reduction=in_network_reduction,
                           name=name or with_options("HGX H800", {
                               "in_network_reduction": in_network_reduction},
                               defaults_of(hgx_h800)), switch_radix=64, switch_model="nvswitch3",
                           tech="nvlink4", gpu_model="h800_sxm")


def dgx_h200(in_network_reduction: bool = True, name: str | None = None) -> Fabric:
    """One DGX H200 / HGX H200 node: 8 H200 GPUs on 4 third-generation NVSwitch chips.

    The NVLink side is the DGX H100's (:func:`dgx_h100`): 18 NVLink 4 links per GPU, 900 GB/s
    bidirectional (V: NVIDIA H200 Tensor Core GPU datasheet), split 5/4/4/5 over 4 NVSwitch
    gen 3 chips (V2: the HGX H100 baseboard, which the H200 shares), 3600 Gb/s per direction
    per GPU. What changes is the GPU: 141 GB HBM3e at 4.8 TB/s (V: same datasheet), so the
    GPUs carry ``gpu_model="h200_sxm"``.

    Parameters
    ----------
    in_network_reduction : bool
        Sets the switches' ``reduce`` (NVLink SHARP).
    name : str, optional
        Name of the fabric, default ``"DGX H200"``.

    Returns
    -------
    Fabric
        See :func:`nvswitch_domain`.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.dgx_h200()
    >>> len(fab.endpoints), fab.injection_gbps("gpu0"), fab.graph.nodes["gpu0"]["gpu_model"]
    (8, 3600.0, 'h200_sxm')
    """
    func = "dgx_h200"
    in_network_reduction = check_bool(func, "in_network_reduction", in_network_reduction)
    name = check_label(func, "name", name)
    return nvswitch_domain(gpus=8, switches=4, links_per_gpu=18, link_gbps=200.0,
                           link_split=(5, 4, 4, 5), in_network_reduction=in_network_reduction,
                           name=name or with_options("DGX H200", {
                               "in_network_reduction": in_network_reduction},
                               defaults_of(dgx_h200)), switch_radix=64, switch_model="nvswitch3",
                           tech="nvlink4", gpu_model="h200_sxm")


def dgx_b200(in_network_reduction: bool = True, name: str | None = None) -> Fabric:
    """One DGX B200 / HGX B200 node: 8 B200 GPUs on 2 NVLink 5 switch chips.

    Each GPU has 18 NVLink 5 links (V: NVIDIA NVLink page, 18 x 100 GB/s = 1.8 TB/s
    bidirectional), 50 GB/s = 400 Gb/s per link per direction (D), so a GPU injects
    18 x 400 = 7200 Gb/s per direction and the node 8 x 1.8 TB/s = 14.4 TB/s bidirectional
    (V2: MLCommons inference v6.0 system description). Two switch chips with 9 links from every
    GPU to each (R: chip count and split not checked against a source). The NVLink 5 switch chip
    has 72 ports (D / R: 144 ports per NVLink Switch tray over 2 chips): catalog model
    ``"nvswitch4"``, radix 72, of which the GPUs use 72. The GPUs carry
    ``gpu_model="b200"``.

    Parameters
    ----------
    in_network_reduction : bool
        Sets the switches' ``reduce`` (NVLink SHARP).
    name : str, optional
        Name of the fabric, default ``"DGX B200"``.

    Returns
    -------
    Fabric
        See :func:`nvswitch_domain`.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.dgx_b200()
    >>> len(fab.switches), fab.injection_gbps("gpu0")
    (2, 7200.0)
    """
    name = check_label("dgx_b200", "name", name)
    in_network_reduction = check_bool("dgx_b200", "in_network_reduction", in_network_reduction)
    return nvswitch_domain(gpus=8, switches=2, links_per_gpu=18, link_gbps=400.0,
                           link_split=(9, 9), in_network_reduction=in_network_reduction,
                           name=name or with_options("DGX B200", {
                               "in_network_reduction": in_network_reduction},
                               defaults_of(dgx_b200)), switch_radix=72, switch_model="nvswitch4",
                           tech="nvlink5", gpu_model="b200")


def gb200_nvl72(in_network_reduction: bool = True, name: str | None = None) -> Fabric:
    """A GB200 NVL72 rack: 72 Blackwell GPUs on 18 NVLink 5 switch chips in 9 switch trays.

    Figures: 18 x 1U compute trays of 4 GPUs and 9 x 1U NVLink Switch trays (V: NVIDIA
    multi-node NVLink tuning guide); 2 chips and 144 NVLink ports per switch tray (V: NVIDIA
    NVLink page), so 72 ports per chip (D); every GPU sends one NVLink 5 link to every one of
    the 18 chips (R: consistent with 18 links per GPU and 72 x 18 = 1296 = 18 x 72 ports, but
    not read in a source). Per GPU 18 x 400 = 7200 Gb/s per direction, rack total
    72 x 1.8 TB/s = 130 TB/s bidirectional (V: NVIDIA NVLink page). NVLink SHARP runs across
    the whole rack (V: NCCL issue 1286).

    Parameters
    ----------
    in_network_reduction : bool
        Sets the switches' ``reduce`` (NVLink SHARP).
    name : str, optional
        Name of the fabric, default ``"GB200 NVL72"``.

    Returns
    -------
    Fabric
        As :func:`nvswitch_domain`, with these attributes instead of ``node=0, rail=i``: GPU
        ``"gpu{i}"`` has ``node = i // 4`` (compute tray), ``rail = i % 4`` (GPU in its
        tray) and ``gpu_model="gb200"`` (the catalog's GB200 GPU); switch ``"nvsw{j}"``
        has ``tray = j // 2`` (switch tray). All GPU-switch arcs form two orbits (up and
        down): GPUs and chips can each be permuted freely.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.gb200_nvl72()
    >>> len(fab.endpoints), len(fab.switches), fab.summary().links_by_tier
    (72, 18, {'gpu-nvswitch': 1296})
    """
    func = "gb200_nvl72"
    in_network_reduction = check_bool(func, "in_network_reduction", in_network_reduction)
    name = check_label(func, "name", name)
    split = (1,) * 18
    params = {"gpus": 72, "switches": 18, "links_per_gpu": 18, "link_gbps": 400.0,
              "link_split": list(split), "in_network_reduction": in_network_reduction,
              "switch_radix": 72, "switch_model": "nvswitch4"}
    return _one_level(func, 72, split, 400.0, "gpu-nvswitch", "nvlink5",
                      name or with_options("GB200 NVL72", {
                          "in_network_reduction": in_network_reduction},
                          defaults_of(gb200_nvl72)), params, 72, "nvswitch4", in_network_reduction,
                      "gpu", "nvsw", gpu_attrs=lambda i: {"node": i // 4, "rail": i % 4,
                                                          "gpu_model": "gb200"},
                      switch_attrs=lambda j: {"tray": j // 2})


def _cyclic_deal(counts: Sequence[int], targets: int) -> list[Counter[int]]:
    """Deal ``counts[j]`` links of source ``j`` over ``targets`` round-robin, source by source.

    The deal continues where the previous source stopped, so every source spreads its links as
    evenly as possible (counts differ by at most one) and so does the whole group of sources.
    """
    out: list[Counter[int]] = []
    position = 0
    for count in counts:
        dealt: Counter[int] = Counter()
        for _ in range(count):
            dealt[position % targets] += 1
            position += 1
        out.append(dealt)
    return out


def nvlink_switch_system(nodes: int = 32, l2_chips: int = 36, l2_radix: int = 64,
                         in_network_reduction: bool = True, name: str | None = None) -> Fabric:
    """DGX H100 nodes joined by the NVLink Switch System: a two-level NVLink fat tree.

    Up to 256 H100 GPUs = 32 DGX H100 nodes (V: NVIDIA "third-generation NVSwitch" blog). Each
    node is :func:`dgx_h100`; its 4 NVSwitches also expose 20/16/16/20 = 72 off-node NVLinks
    (V2: Hot Chips 34 slides). The second level is 18 NVLink Switch 1U boxes (V2:
    wheelersnetwork.com), each with 2 NVSwitch chips (V: NVIDIA NVLink4 glossary) and 128
    NVLink 4 ports (R: Hot Chips 34), so 36 chips of 64 ports (D) and 36 x 64 = 2304 =
    32 x 72 ports: exactly one per off-node link of 32 nodes (D).

    Wiring (a design choice; NVIDIA publishes no cable map): within a node the 72 off-node
    links are dealt round-robin over the L2 chips, switch by switch, continuing where the
    previous switch stopped. With 36 chips, NVSwitch 0 takes chips 0-19, NVSwitch 1 chips
    20-35, NVSwitch 2 chips 0-15 and NVSwitch 3 chips 16-35: every L1 switch spreads its links
    evenly over the chips and every chip gets 2 links from each node. Every node is wired the
    same way.

    Parameters
    ----------
    nodes : int
        DGX H100 nodes, >= 1; ports limit it (32 with the default second level).
    l2_chips : int
        Second-level NVSwitch chips, >= 1.
    l2_radix : int
        Ports per second-level chip; the deal must fit (each chip takes
        ``nodes * ceil(72 / l2_chips)`` ports at most), else InvalidParameterError.
    in_network_reduction : bool
        Sets ``reduce`` of every NVSwitch.
    name : str, optional
        Name of the fabric.

    Returns
    -------
    Fabric
        ``8 * nodes`` GPUs, ``4 * nodes + l2_chips`` switches. Each node's GPUs carry 18 x 200 =
        3600 Gb/s per direction to its NVSwitches (tier ``"gpu-nvswitch"``) and the node
        72 x 200 = 14400 Gb/s to the second level (tier ``"nvswitch-l2"``): with 32 nodes the
        second level carries 32 x 72 x 25 GB/s = 57.6 TB/s per direction, the all-to-all
        figure NVIDIA quotes (V, same blog), and half of it crosses a bisection both ways:
        460.8 Tb/s (V2: wheelersnetwork.com).

    Notes
    -----
    Names: GPU ``"n{n}.gpu{i}"`` (``node=n``, ``rail=i``), L1 NVSwitch ``"n{n}.nvsw{j}"``
    (layer 1, ``node=n``, model ``"nvswitch3"``, radix 64), L2 chip ``"l2.{c}"`` (layer 2,
    ``box = c // 2``, model ``"nvswitch3"``, radix ``l2_radix``).

    Symmetry: node permutations, GPU permutations within a node, and permutations of L2 chips
    that receive the same links from every node act transitively on the GPUs. Arc orbits:
    GPU-L1 arcs by L1 switch index; L1-L2 arcs by L1 switch index and the L2 chip's class
    (the links it gets from one node).

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.nvlink_switch_system(nodes=2)
    >>> len(fab.endpoints), len(fab.switches), fab.summary().links_by_tier["nvswitch-l2"]
    (16, 44, 144)
    """
    func = "nvlink_switch_system"
    nodes = check_int(func, "nodes", nodes, minimum=1)
    l2_chips = check_int(func, "l2_chips", l2_chips, minimum=1)
    l2_radix = check_int(func, "l2_radix", l2_radix, minimum=1)
    in_network_reduction = check_bool(func, "in_network_reduction", in_network_reduction)
    name = check_label(func, "name", name)
    # At least 8 GPUs and 4 NVSwitch chips per node with 32 GPU-switch bundles, and the L2
    # chips: refuse an absurd size before dealing links over the chips.
    check_size(func, nodes * 12 + l2_chips, nodes * 32 + l2_chips)
    down = (5, 4, 4, 5)
    off_node = (20, 16, 16, 20)
    deal = _cyclic_deal(off_node, l2_chips)
    per_node = Counter[int]()
    for dealt in deal:
        per_node.update(dealt)
    busiest = max(per_node.values())
    if nodes * busiest > l2_radix:
        raise fail(func, "l2_radix", f"at least the {nodes * busiest} ports the busiest L2 chip "
                   f"uses ({nodes} nodes x {busiest} links)", l2_radix)

    # L2 chips that get the same links from every node are interchangeable.
    signature = {c: tuple(dealt[c] for dealt in deal) for c in range(l2_chips)}
    classes = {sig: i for i, sig in enumerate(dict.fromkeys(signature.values()))}
    params = {"nodes": nodes, "l2_chips": l2_chips, "l2_radix": l2_radix,
              "in_network_reduction": in_network_reduction}
    b = FabricBuilder(name or with_options(f"NVLink Switch System ({nodes} x DGX H100)", {
        "l2_chips": l2_chips, "l2_radix": l2_radix, "in_network_reduction": in_network_reduction},
        defaults_of(nvlink_switch_system)), params)
    # Each second-level chip is half of a 1U NVLink Switch box (catalog "nvlink4_switch").
    l2 = [b.switch(f"l2.{c}", layer=2, radix=l2_radix, model="nvlink4_switch",
                   reduce=in_network_reduction, box=c // 2) for c in range(l2_chips)]
    for n in range(nodes):
        gpus = [b.gpu(f"n{n}.gpu{i}", node=n, rail=i) for i in range(8)]
        l1 = [b.switch(f"n{n}.nvsw{j}", layer=1, radix=64, model="nvswitch3",
                       reduce=in_network_reduction, node=n) for j in range(4)]
        for g in gpus:
            for j, (s, k) in enumerate(zip(l1, down, strict=True)):
                b.link(g, s, 200.0, "gpu-nvswitch", "nvlink4", links=k,
                       orbit=f"gpu-nvswitch:sw{j}")
        for j, (s, dealt) in enumerate(zip(l1, deal, strict=True)):
            for c, k in sorted(dealt.items()):
                b.link(s, l2[c], 200.0, "nvswitch-l2", "nvlink4", links=k,
                       orbit=f"nvswitch-l2:sw{j}:class{classes[signature[c]]}")
    return b.build(symmetric=True, group="node permutations x GPU permutations within a node "
                   "x permutations of equally wired L2 chips")


def nvl576(racks: int = 8, uplinks_per_switch: int | None = None, l2_radix: int = 72,
           gpus_per_rack: int = 72, switches_per_rack: int = 18,
           in_network_reduction: bool = True, name: str | None = None) -> Fabric:
    """A model of the ANNOUNCED 576-GPU GB200 NVLink domain: 8 NVL72 racks and L2 NVSwitches.

    ANNOUNCED, NOT SHIPPED. NVIDIA documentation speaks of "support for up to 576 GPUs in a
    single NVLink domain" (V: Base Command Manager nvlinkinfo page), but an NCCL maintainer
    stated that "there are no multi-level NVLink switch system products available from Nvidia
    currently" (V: github.com/NVIDIA/nccl/issues/1286), and the NVL576 name was later reused
    for Rubin Ultra (R). NVIDIA has published no wiring; everything below the rack level is a
    design choice of this model, not a product description.

    The model: each rack is a :func:`gb200_nvl72` (one NVLink 5 link from every GPU to every
    L1 chip of its rack). Because the rack's L1 chips are not joined to each other, L1 chip
    ``j`` of every rack forms plane ``j``; each plane gets its own L2 chips, so the 18 planes
    are independent two-level fat trees. Every L1 chip sends ``uplinks_per_switch`` links
    (default: as many as it has GPU links, non-blocking) dealt round-robin over its plane's L2
    chips. A plane has the fewest L2 chips of ``l2_radix`` ports that fit the deal; with the
    defaults 8 per plane, 144 L2 chips, 9 links from each L1 chip to each L2 chip of its plane.
    The L1 chips then need 72 + 72 = 144 ports, twice the 72 of the NVL72 chip (D / R): a
    hypothetical part, so they carry ``model=None`` and radix = ports used; L2 chips are
    ``"nvswitch4"`` with radix ``l2_radix``.

    Parameters
    ----------
    racks : int
        NVL72 racks, >= 1 (8 for the announced system).
    uplinks_per_switch : int, optional
        Links from each L1 chip to the second level; default ``gpus_per_rack``.
    l2_radix : int
        Ports per L2 chip, >= 1.
    gpus_per_rack, switches_per_rack : int
        72 and 18 for GB200 NVL72; smaller values give instances small enough to check by hand
        or with :func:`~fabricopt.verify_symmetry`.
    in_network_reduction : bool
        Sets ``reduce`` of every switch.
    name : str, optional
        Name of the fabric.

    Returns
    -------
    Fabric
        ``racks * gpus_per_rack`` GPUs; per GPU ``switches_per_rack`` NVLink 5 links of
        400 Gb/s (tier ``"gpu-nvswitch"``); L1-L2 tier ``"nvswitch-l2"``.

    Notes
    -----
    Names: GPU ``"r{r}.gpu{i}"`` (``rack=r``, ``node = r * ceil(gpus_per_rack / 4) + i // 4``
    the compute tray, ``rail = i % 4``); L1 chip ``"r{r}.nvsw{j}"`` (layer 1, ``rack=r``,
    ``tray = j // 2``, ``plane=j``); L2 chip ``"l2.p{j}.{c}"`` (layer 2, ``plane=j``).

    Symmetry: rack permutations, GPU permutations within a rack, plane permutations and
    permutations of equally wired L2 chips within a plane act transitively on the GPUs. Arc
    orbits: all GPU-L1 arcs (up, down); L1-L2 arcs by the L2 chip's class.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.nvl576()
    >>> len(fab.endpoints), len(fab.switches), fab.injection_gbps("r0.gpu0")
    (576, 288, 7200.0)
    """
    func = "nvl576"
    racks = check_int(func, "racks", racks, minimum=1)
    gpus_per_rack = check_int(func, "gpus_per_rack", gpus_per_rack, minimum=1)
    switches_per_rack = check_int(func, "switches_per_rack", switches_per_rack, minimum=1)
    uplinks = gpus_per_rack if uplinks_per_switch is None else check_int(
        func, "uplinks_per_switch", uplinks_per_switch, minimum=1)
    l2_radix = check_int(func, "l2_radix", l2_radix, minimum=1)
    in_network_reduction = check_bool(func, "in_network_reduction", in_network_reduction)
    name = check_label(func, "name", name)
    if racks > l2_radix:
        raise fail(func, "l2_radix", f"at least racks ({racks}): every rack needs a port on "
                   "each L2 chip of its planes", l2_radix)
    # Fewest L2 chips per plane whose busiest chip fits: racks * ceil(uplinks / p) ports,
    # that is ceil(uplinks / p) <= floor(l2_radix / racks), so p = ceil(uplinks / that).
    per_plane = -(-uplinks // (l2_radix // racks))
    # Every GPU has a link bundle to every switch of its rack; each switch one to each L2 chip
    # of its plane (at most uplinks of them).
    check_size(func, racks * (gpus_per_rack + switches_per_rack) + per_plane * switches_per_rack,
               racks * switches_per_rack * (gpus_per_rack + min(uplinks, per_plane)))
    deal = _cyclic_deal([uplinks], per_plane)[0]
    classes = {k: i for i, k in enumerate(dict.fromkeys(deal[c] for c in range(per_plane)))}
    trays = math.ceil(gpus_per_rack / 4)
    params = {"racks": racks, "uplinks_per_switch": uplinks, "l2_radix": l2_radix,
              "gpus_per_rack": gpus_per_rack, "switches_per_rack": switches_per_rack,
              "l2_per_plane": per_plane, "in_network_reduction": in_network_reduction}
    b = FabricBuilder(name or with_options(f"NVL576 model ({racks} x NVL72, announced)", {
        "uplinks_per_switch": uplinks_per_switch, "l2_radix": l2_radix,
        "gpus_per_rack": gpus_per_rack, "switches_per_rack": switches_per_rack,
        "in_network_reduction": in_network_reduction}, defaults_of(nvl576)), params)
    l2 = [[b.switch(f"l2.p{j}.{c}", layer=2, radix=l2_radix, model="nvswitch4",
                    reduce=in_network_reduction, plane=j) for c in range(per_plane)]
          for j in range(switches_per_rack)]
    for r in range(racks):
        gpus = [b.gpu(f"r{r}.gpu{i}", rack=r, node=r * trays + i // 4, rail=i % 4)
                for i in range(gpus_per_rack)]
        l1 = [b.switch(f"r{r}.nvsw{j}", layer=1, radix=gpus_per_rack + uplinks, model=None,
                       reduce=in_network_reduction, rack=r, tray=j // 2, plane=j)
              for j in range(switches_per_rack)]
        for g in gpus:
            for s in l1:
                b.link(g, s, 400.0, "gpu-nvswitch", "nvlink5")
        for j, s in enumerate(l1):
            for c, k in sorted(deal.items()):
                b.link(s, l2[j][c], 400.0, "nvswitch-l2", "nvlink5", links=k,
                       orbit=f"nvswitch-l2:class{classes[k]}")
    return b.build(symmetric=True, group="rack, GPU-in-rack, plane and equally wired L2 chip "
                   "permutations")


def ualink_pod(accelerators: int, switches: int, ports_per_accelerator: int,
               lanes_per_port: int = 4, lane_gbps: float = 200.0,
               switch_radix: int | None = None, name: str | None = None) -> Fabric:
    """A UALink 200G 1.0 pod: accelerators joined by UALink switches, one level.

    UALink 200G 1.0 (ratified April 2025) runs 200 Gb/s per lane and joins up to 1,024
    accelerators in one pod (V: UALink Consortium FAQ and "UALink 200G 1.0 Specification
    Overview", ualinkconsortium.org). Ports are x1, x2 or x4 lanes, an x4 port carrying
    800 Gb/s per direction; signalling is 212.5 GT/s per lane to cover FEC and encoding (V2:
    Tom's Hardware and SemiEngineering reports on the 1.0 release). A switch port joins one
    accelerator (V2: UALink 1.0 white paper, quoted by Wikipedia), so with
    ``ports_per_accelerator == switches`` every accelerator has one port on every switch;
    more ports than switches give each pair a bundle of ports.

    Parameters
    ----------
    accelerators : int
        Accelerators in the pod, 2 to 1024.
    switches : int
        UALink switches, >= 1.
    ports_per_accelerator : int
        UALink ports per accelerator, >= ``switches``; spread over the switches as evenly as
        possible (:func:`even_split`: extra ports go to the end switches first, alternating).
    lanes_per_port : int
        1, 2 or 4 lanes per port.
    lane_gbps : float
        Data rate per lane per direction (Gb/s).
    switch_radix : int, optional
        Ports per switch; by default the ports the accelerators use. A spread needing more
        raises InvalidParameterError.
    name : str, optional
        Name of the fabric.

    Returns
    -------
    Fabric
        Accelerators ``"acc0" ..`` (role ``gpu``, layer 0, ``node=0``, ``rail=i``), switches
        ``"uls0" ..`` (layer 1, ``model=None``, ``reduce=False``: the cited summaries describe
        no in-network reduction). Tier ``"gpu-ualink-switch"``, tech ``"ualink"``; a port
        carries ``lanes_per_port * lane_gbps`` Gb/s per direction. Symmetry as
        :func:`nvswitch_domain`.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.ualink_pod(accelerators=64, switches=4, ports_per_accelerator=4)
    >>> fab.injection_gbps("acc0"), fab.graph.nodes["uls0"]["radix"]
    (3200.0, 64)
    """
    func = "ualink_pod"
    accelerators = check_int(func, "accelerators", accelerators, minimum=2,
                             maximum=UALINK_MAX_ACCELERATORS)
    switches = check_int(func, "switches", switches, minimum=1)
    ports = check_int(func, "ports_per_accelerator", ports_per_accelerator, minimum=1)
    lanes = check_choice(func, "lanes_per_port",
                         check_int(func, "lanes_per_port", lanes_per_port), (1, 2, 4))
    lane_gbps = check_positive(func, "lane_gbps", lane_gbps)
    if switch_radix is not None:
        switch_radix = check_int(func, "switch_radix", switch_radix, minimum=1)
    name = check_label(func, "name", name)
    if ports < switches:
        raise fail(func, "ports_per_accelerator", f"an integer >= switches ({switches}) so "
                   "that every switch gets a port", ports)
    split = even_split(ports, switches)
    port_gbps = lanes * lane_gbps
    params = {"accelerators": accelerators, "switches": switches,
              "ports_per_accelerator": ports, "lanes_per_port": lanes, "lane_gbps": lane_gbps,
              "switch_radix": switch_radix, "port_split": list(split)}
    return _one_level(func, accelerators, split, port_gbps, "gpu-ualink-switch", "ualink",
                      name or with_options(
                          f"ualink_pod({accelerators} accelerators, {switches} switches, "
                          f"{ports} ports each)", {"lanes_per_port": lanes,
                                                   "lane_gbps": lane_gbps,
                                                   "switch_radix": switch_radix},
                          defaults_of(ualink_pod)),
                      params, switch_radix, None, False, "acc", "uls",
                      gpu_attrs=lambda i: {"node": 0, "rail": i})


__all__ = ["A100_MODELS", "dgx_a100", "dgx_b200", "dgx_h100", "dgx_h200", "even_split",
           "gb200_nvl72", "hgx_h800", "nvl576", "nvlink_switch_system", "nvswitch_domain",
           "ualink_pod"]
