"""Small hand-built fabrics shared by several test modules."""

from fabricopt.generators._builder import FabricBuilder


def nvswitch_like(gpus=2, split=(1, 2), rails=None, gbps=200.0):
    """A small NVSwitch-style domain: every GPU sends split[j] links to switch j.

    Its claim (GPU permutations x permutations of switches with equal link counts) has one
    arc orbit per switch link count and direction, the same shape as fo.nvswitch_domain.
    """
    b = FabricBuilder(f"nvs{gpus}", {})
    gs = [b.gpu(f"gpu{i}", node=0, rail=i if rails is None else rails[i]) for i in range(gpus)]
    sw = [b.switch(f"nvsw{j}", layer=1, radix=gpus * k, model="nvswitch3", reduce=True)
          for j, k in enumerate(split)]
    for g in gs:
        for s, k in zip(sw, split, strict=True):
            b.link(g, s, gbps, "gpu-nvswitch", "nvlink4", links=k, orbit=f"gpu-nvswitch:{k}")
    return b.build(symmetric=True, group="GPU and equal-switch permutations")
