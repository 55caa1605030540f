// Not built: see Cargo.toml.
