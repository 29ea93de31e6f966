//! Fuzz target: scenario text through the TOML and the JSON front ends, which
//! parse *and* validate (dumbbell and swarm scenarios alike). Any input must
//! give a scenario or a `ScenarioError`, never a panic, and the error must
//! format.

#![no_main]

use libfuzzer_sys::fuzz_target;
use torrentlab_sim::AnyScenario;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for parsed in [AnyScenario::from_toml_str(text, "fuzz.toml"), AnyScenario::from_json_str(text, "fuzz.json")] {
        match parsed {
            Ok(s) => {
                let _ = (s.name(), s.seed());
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
});
