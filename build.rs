//! Link-time set-up: with the `train` feature, turnlake-train finds libtorch
//! (installed by ./setup.sh and handed over as LIBTORCH) at run time through
//! an rpath, so no LD_LIBRARY_PATH is needed.

fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if std::env::var_os("CARGO_FEATURE_TRAIN").is_none() {
        return;
    }
    if let Ok(libtorch) = std::env::var("LIBTORCH") {
        let lib = std::path::Path::new(&libtorch).join("lib");
        let lib = std::fs::canonicalize(&lib).unwrap_or(lib);
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    }
}
