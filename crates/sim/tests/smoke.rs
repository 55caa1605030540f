use warmcore_sim::{run, RunConfig};
#[test]
fn kbuild_small_completes() {
    let r = run(&RunConfig::new("default", "kbuild:files=100", "cfs", "powersave", 1)).unwrap();
    assert!(r.partial.is_none());
}
