//! Scenarios: a TOML file (or an equivalent JSON/dict) -> a validated model.
//!
//! Parsing (`raw`) and interpretation (`validate`) are separate, as in
//! Shadow. Every error names the file, the field path and what is allowed; see
//! [`ScenarioError`].

/// A parameter table whose fields are all optional, with a field-wise overlay.
macro_rules! params {
    ($(#[$doc:meta])* $name:ident { $($field:ident: $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Deserialize, Default, Clone)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $(pub $field: Option<$ty>,)*
        }

        impl $name {
            /// Field-wise: `over`'s value where it has one, else `self`'s.
            pub fn overlaid(&self, over: Option<&$name>) -> $name {
                let Some(over) = over else { return self.clone() };
                $name { $($field: over.$field.clone().or(self.$field.clone()),)* }
            }
        }
    };
}

pub mod capture;
mod controllers;
pub mod household;
mod messages;
pub mod pacing;
mod profile;
mod raw;
pub mod swarm;
mod units;
mod utp;
mod validate;

pub use profile::ClientName;
pub use swarm::SwarmScenario;

pub use units::{parse_buffer, parse_duration, parse_rate, parse_size, BufferSpec};

use std::fmt;
use std::path::Path;

use torrentlab_engine::Duration;
use torrentlab_net::LinkConfig;
use torrentlab_transport::cc::CcConfig;
use torrentlab_transport::tcp::TcpConfig;
use torrentlab_transport::utp::UtpConfig;

/// A scenario that cannot be run, with where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file (or `<dict>` for one built in code).
    pub file: String,
    /// Dotted path of the offending field (`flows[1].cc`), or a location such as
    /// `line 3, column 7` for syntax errors, or `(file)` for the file itself.
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.field, self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// When a flow starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StartSpec {
    At(Duration),
    /// Drawn uniformly in `[lo, hi]` from the flow's own random stream.
    Uniform(Duration, Duration),
}

impl StartSpec {
    /// The latest time this start can take.
    pub fn latest(&self) -> Duration {
        match *self {
            StartSpec::At(t) => t,
            StartSpec::Uniform(_, hi) => hi,
        }
    }
}

/// One bulk flow from its own sender host to the shared receiver.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub label: String,
    pub cc: CcConfig,
    pub tcp: TcpConfig,
    pub start: StartSpec,
    /// The application stops writing at this time (absent: end of run).
    pub stop: Option<Duration>,
    /// Bytes to transfer (absent: unlimited, a long-lived flow).
    pub size: Option<u64>,
    /// This flow's core one-way delay, both directions (absent: the network's).
    pub one_way_delay: Option<Duration>,
    /// `Some`: the flow runs over uTP with these settings (`cc` and `tcp` are
    /// then unused); `None`: over TCP.
    pub utp: Option<UtpConfig>,
}

/// How host clocks relate to simulated time (uTP timestamps read them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockOffsets {
    /// Every host's clock starts at a random 32-bit microsecond value.
    Random,
    /// Every host's clock reads simulated time.
    Zero,
}

/// The dumbbell: N sender hosts, each behind its own access link, one receiver
/// whose downlink is the shared bottleneck.
#[derive(Clone, Debug, PartialEq)]
pub struct DumbbellSpec {
    /// One-way propagation delay of the core between every sender and the receiver.
    pub one_way_delay: Duration,
    /// The bottleneck (the receiver's downlink).
    pub bottleneck: LinkConfig,
    /// Every sender's uplink; its delay also applies to the sender's downlink.
    pub access: LinkConfig,
    /// Bernoulli loss of packets arriving at the receiver (data).
    pub data_loss: f64,
    /// Bernoulli loss of packets arriving at the senders (ACKs).
    pub ack_loss: f64,
    pub clock_offsets: ClockOffsets,
}

/// What to record.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricsSpec {
    /// Per-flow time series period (None: no time series).
    pub sample_interval: Option<Duration>,
    /// Log every dequeue at the bottleneck.
    pub queue_log: bool,
    /// Start of the window the summary is computed over (None: when the last
    /// flow has started).
    pub summary_start: Option<Duration>,
}

/// A validated scenario, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub duration: Duration,
    pub network: DumbbellSpec,
    pub flows: Vec<FlowSpec>,
    pub metrics: MetricsSpec,
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = read_text(path)?;
        Self::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses and validates TOML text; `file` names it in errors.
    pub fn from_toml_str(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        let table = toml_table(text, file)?;
        let raw = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|e| path_error(file, e.path().to_string(), e.inner().to_string()))?;
        validate::validate(raw, file)
    }

    /// Parses and validates a JSON document (how Python dicts arrive).
    pub fn from_json_str(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let value = json_value(text, origin)?;
        let raw = serde_path_to_error::deserialize(value)
            .map_err(|e| path_error(origin, e.path().to_string(), e.inner().to_string()))?;
        validate::validate(raw, origin)
    }
}

/// `[capture]` in a file without peers: captures are of swarm peers.
fn capture_in_dumbbell(file: &str) -> ScenarioError {
    ScenarioError {
        file: file.into(),
        field: "capture".into(),
        message: "captures are of swarm peers ([[peers]]); a dumbbell of [[flows]] has none: remove [capture]".into(),
    }
}

/// Any scenario: a dumbbell of bulk flows (`[[flows]]`) or a swarm (`[torrent]`
/// and `[[peers]]`; either key marks a swarm, so a missing one is reported as such).
#[derive(Clone, Debug, PartialEq)]
pub enum AnyScenario {
    Dumbbell(Scenario),
    Swarm(SwarmScenario),
}

impl AnyScenario {
    pub fn from_file(path: &Path) -> Result<AnyScenario, ScenarioError> {
        let text = read_text(path)?;
        Self::from_toml_str(&text, &path.display().to_string())
    }

    pub fn from_toml_str(text: &str, file: &str) -> Result<AnyScenario, ScenarioError> {
        let table = toml_table(text, file)?;
        if table.contains_key("peers") || table.contains_key("torrent") || table.contains_key("household") {
            let raw = serde_path_to_error::deserialize(toml::Value::Table(table))
                .map_err(|e| path_error(file, e.path().to_string(), e.inner().to_string()))?;
            swarm::validate(raw, file).map(AnyScenario::Swarm)
        } else if table.contains_key("capture") {
            Err(capture_in_dumbbell(file))
        } else {
            Scenario::from_toml_str(text, file).map(AnyScenario::Dumbbell)
        }
    }

    pub fn from_json_str(text: &str, origin: &str) -> Result<AnyScenario, ScenarioError> {
        let value = json_value(text, origin)?;
        if value.get("peers").is_some() || value.get("torrent").is_some() || value.get("household").is_some() {
            let raw = serde_path_to_error::deserialize(value)
                .map_err(|e| path_error(origin, e.path().to_string(), e.inner().to_string()))?;
            swarm::validate(raw, origin).map(AnyScenario::Swarm)
        } else if value.get("capture").is_some() {
            Err(capture_in_dumbbell(origin))
        } else {
            Scenario::from_json_str(text, origin).map(AnyScenario::Dumbbell)
        }
    }

    pub fn name(&self) -> &str {
        match self {
            AnyScenario::Dumbbell(s) => &s.name,
            AnyScenario::Swarm(s) => &s.name,
        }
    }

    pub fn seed(&self) -> u64 {
        match self {
            AnyScenario::Dumbbell(s) => s.seed,
            AnyScenario::Swarm(s) => s.seed,
        }
    }

    pub fn set_seed(&mut self, seed: u64) {
        match self {
            AnyScenario::Dumbbell(s) => s.seed = seed,
            AnyScenario::Swarm(s) => s.seed = seed,
        }
    }
}

fn read_text(path: &Path) -> Result<String, ScenarioError> {
    {
        let file = path.display().to_string();
        let whole = |message: String| ScenarioError { file: file.clone(), field: "(file)".into(), message };
        let bytes = std::fs::read(path).map_err(|e| {
            whole(match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                _ if path.is_dir() => "is a directory, not a scenario file".to_string(),
                _ => format!("cannot be read: {e}"),
            })
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            whole(format!(
                "is not UTF-8 text (invalid byte at offset {}); scenario files must be UTF-8 TOML",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Ok(text)
    }
}

fn toml_table(text: &str, file: &str) -> Result<toml::Table, ScenarioError> {
    {
        if text.trim().is_empty() {
            return Err(ScenarioError {
                file: file.into(),
                field: "(file)".into(),
                message: "is empty; a scenario needs [run] and either [[flows]] (a dumbbell) or [torrent] and [[peers]] (a swarm)".into(),
            });
        }
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            let field = e.span().map_or_else(|| "(syntax)".to_string(), |s| line_col(text, s.start));
            ScenarioError { file: file.into(), field, message: format!("TOML syntax error: {}", e.message().trim()) }
        })?;
        Ok(table)
    }
}

fn json_value(text: &str, origin: &str) -> Result<serde_json::Value, ScenarioError> {
    serde_json::from_str(text).map_err(|e| ScenarioError {
        file: origin.into(),
        field: "(document)".into(),
        message: format!("not valid JSON: {e}"),
    })
}

fn line_col(text: &str, offset: usize) -> String {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {col}")
}

fn path_error(file: &str, path: String, message: String) -> ScenarioError {
    // serde writes "invalid type: integer `60`, expected ..."; keep it, it names
    // both, but in plain words (no Rust types: `messages`). toml adds
    // "\nin `table`" context, which the field path already says.
    let message = messages::plain(message.lines().next().unwrap_or_default(), &path);
    // A missing field is named as the field itself, not its parent table.
    let missing = message.strip_prefix("missing field `").and_then(|m| m.split('`').next()).map(str::to_string);
    let field = match (path.as_str(), missing) {
        (".", Some(m)) => m,
        (".", None) => "(top level)".to_string(),
        (p, Some(m)) => format!("{p}.{m}"),
        (_, None) => path,
    };
    ScenarioError { file: file.into(), field, message }
}

#[cfg(test)]
mod input_tests;
#[cfg(test)]
mod tests;
