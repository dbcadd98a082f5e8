//! The layering the workspace promises: the core depends on no MPI, HDF5,
//! command-line or progress-bar crate (its manifest names none, and it has
//! no path dependency through which one could come).

#[test]
fn the_core_depends_on_no_runtime_crate() {
    let manifest: toml::Table = toml::from_str(include_str!("../Cargo.toml")).unwrap();
    let forbidden = [
        "mpi",
        "hdf5",
        "hdf5-metno",
        "clap",
        "indicatif",
        "signal-hook",
    ];
    for section in ["dependencies", "build-dependencies"] {
        let Some(deps) = manifest.get(section).and_then(|d| d.as_table()) else {
            continue;
        };
        for (name, spec) in deps {
            let package = spec.get("package").and_then(|p| p.as_str()).unwrap_or(name);
            assert!(
                !forbidden.contains(&name.as_str()) && !forbidden.contains(&package),
                "gradcode-core [{section}] names {name}"
            );
            assert!(
                spec.get("path").is_none(),
                "gradcode-core [{section}] has a path dependency {name}"
            );
        }
    }
    assert!(
        manifest.get("features").is_none(),
        "gradcode-core has no features that could switch a runtime crate on"
    );
}
