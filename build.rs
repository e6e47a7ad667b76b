//! Links the system's libpocketsphinx and libsphinxbase (found with pkg-config) when the `phrase`
//! feature is on; nothing otherwise.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "phrase")]
    if let Err(error) = pkg_config::Config::new()
        .atleast_version("0.8")
        .probe("pocketsphinx")
    {
        panic!(
            "feature `phrase` needs the system libpocketsphinx (Debian: apt-get install \
             libpocketsphinx-dev), or build without it (--no-default-features and the other \
             features you want): {error}"
        );
    }
}
