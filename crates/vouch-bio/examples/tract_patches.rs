//! Counts the graph patches tract applies while it loads CAM++ (`docs/performance.md`, "Where
//! the loading time goes"), from tract's debug log, grouped by pass and operator.
//!
//! `cargo run --release -p vouch-bio --example tract_patches [MODELS_DIR]` (default `models`).

use std::collections::BTreeMap;
use std::sync::Mutex;

static COUNTS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

struct PatchCounter;

impl log::Log for PatchCounter {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let message = record.args().to_string();
        let Some(rest) = message.strip_prefix("applying patch #") else {
            return;
        };
        // "N: pass/i >> what # node-name op >> ...": the pass and the first step, digits
        // dropped so that the layers of one kind count together.
        let name = rest.split_once(": ").map_or("", |(_, name)| name);
        let key: String = name
            .split(" >> ")
            .take(2)
            .collect::<Vec<_>>()
            .join(" >> ")
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect();
        if let Ok(mut counts) = COUNTS.lock() {
            *counts.entry(key).or_default() += 1;
        }
    }

    fn flush(&self) {}
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    log::set_logger(&PatchCounter).map_err(|e| e.to_string())?;
    log::set_max_level(log::LevelFilter::Debug);
    let dir = std::env::args().nth(1).unwrap_or_else(|| "models".into());
    let start = std::time::Instant::now();
    let model = vouch_bio::infer::Model::load(dir.as_ref(), vouch_bio::infer::SPEAKER_EMBEDDER)?;
    let seconds = start.elapsed().as_secs_f64();
    drop(model);
    let counts = COUNTS.lock().map_err(|_| "poisoned")?.clone();
    let mut counts: Vec<(String, usize)> = counts.into_iter().collect();
    counts.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    println!(
        "{}: loaded in {seconds:.3} s, {total} patches",
        vouch_bio::infer::SPEAKER_EMBEDDER.file
    );
    for (what, n) in counts.iter().take(30) {
        println!("{n:6} {what}");
    }
    Ok(())
}
