

def test_a_tier_not_built_is_recorded():
    """tiers=3 over one pod builds a leaf-spine (a core above one pod's spines would carry
    nothing): 64 endpoints at radix 16 are 8 leaves of 8 down, one pod (a radix-16 spine
    takes 8 leaves down), so two tiers are built and params say so."""
    fab = fo.clos(64, radix=16, tiers=3)
    assert fab.params["tiers"] == 3 and fab.params["tiers_built"] == 2
    assert {d["layer"] for _, d in fab.graph.nodes(data=True) if d["role"] == "switch"} == {1, 2}
    # 16 DGX H100 (128 GPUs) at the default radix 64 are one pod too; 4,096 GPUs are not.
    small = fo.cluster(fo.dgx_h100(), nodes=16, scale_out="clos", tiers=3)
    assert small.params["tiers_built"] == 2
    assert "tiers_built" not in fo.clos(64, radix=16, tiers=2).params
