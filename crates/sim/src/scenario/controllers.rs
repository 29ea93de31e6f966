//! Congestion-controller tables: `[cubic]`, `[vegas]`, `[lp]`, `[nice]`,
//! `[ledbat]` at the top level (defaults for every flow using that controller)
//! and the same tables inside a `[[flows]]` entry (that flow only). Unset fields
//! keep the published constants (each config's `Default`).

use serde::Deserialize;
use torrentlab_engine::Duration;
use torrentlab_transport::cc::{CcConfig, CubicConfig, LedbatConfig, LpConfig, NiceConfig, VegasConfig};

use super::raw::CcName;
use super::units::DurationStr;
use super::validate::Ctx;
use super::ScenarioError;

params!(
    /// `[cubic]`: RFC 9438 parameters.
    RawCubic { c: f64, beta: f64, fast_convergence: bool, tcp_friendliness: bool, hystart: bool }
);
params!(
    /// `[vegas]`: thresholds in packets.
    RawVegas { alpha: f64, beta: f64, gamma: f64 }
);
params!(
    /// `[lp]`: TCP-LP.
    RawLp { threshold: f64, inference_rtts: f64 }
);
params!(
    /// `[nice]`: TCP Nice (and the Vegas thresholds it builds on).
    RawNice { threshold: f64, fraction: f64, min_window: f64, alpha: f64, beta: f64, gamma: f64 }
);
params!(
    /// `[ledbat]`: the early-draft LEDBAT.
    RawLedbat {
        target: DurationStr,
        gain: f64,
        min_cwnd: u32,
        current_filter: u32,
        base_history: u32,
        base_interval: DurationStr,
    }
);

/// The controller tables present at one level (top level or one flow).
#[derive(Default)]
pub struct Controllers<'a> {
    pub cubic: Option<&'a RawCubic>,
    pub vegas: Option<&'a RawVegas>,
    pub lp: Option<&'a RawLp>,
    pub nice: Option<&'a RawNice>,
    pub ledbat: Option<&'a RawLedbat>,
}

impl Controllers<'_> {
    /// True if any controller table is present.
    pub fn any(&self) -> bool {
        self.present().next().is_some()
    }

    fn present(&self) -> impl Iterator<Item = &'static str> + '_ {
        [
            ("cubic", self.cubic.is_some()),
            ("vegas", self.vegas.is_some()),
            ("lp", self.lp.is_some()),
            ("nice", self.nice.is_some()),
            ("ledbat", self.ledbat.is_some()),
        ]
        .into_iter()
        .filter_map(|(n, p)| p.then_some(n))
    }
}

fn name(cc: CcName) -> &'static str {
    match cc {
        CcName::Newreno => "newreno",
        CcName::Cubic => "cubic",
        CcName::Vegas => "vegas",
        CcName::Lp => "lp",
        CcName::Nice => "nice",
        CcName::Ledbat => "ledbat",
    }
}

/// Builds the controller of one flow from the global and the flow's tables.
/// `at` turns a flow field name into its path (`flows[3].cubic`).
pub(super) fn build(
    cx: &Ctx,
    cc: CcName,
    global: &Controllers,
    flow: &Controllers,
    at: &dyn Fn(&str) -> String,
) -> Result<CcConfig, ScenarioError> {
    if let Some(other) = flow.present().find(|t| *t != name(cc)) {
        return Err(cx.err(at(other), format!("only allowed when cc = \"{other}\" (this flow uses \"{}\")", name(cc))));
    }
    // Errors point at the flow's table if it set anything, else at the global one.
    let path = |table: &str, set: bool| if set { at(table) } else { table.to_string() };
    Ok(match cc {
        CcName::Newreno => CcConfig::NewReno,
        CcName::Cubic => {
            let r = global.cubic.cloned().unwrap_or_default().overlaid(flow.cubic);
            let p = path("cubic", flow.cubic.is_some());
            let d = CubicConfig::default();
            CcConfig::Cubic(CubicConfig {
                c: positive(cx, &p, "c", r.c, d.c)?,
                beta: fraction(cx, &p, "beta", r.beta, d.beta)?,
                fast_convergence: r.fast_convergence.unwrap_or(d.fast_convergence),
                tcp_friendliness: r.tcp_friendliness.unwrap_or(d.tcp_friendliness),
                hystart: r.hystart.unwrap_or(d.hystart),
            })
        }
        CcName::Vegas => {
            let r = global.vegas.cloned().unwrap_or_default().overlaid(flow.vegas);
            let p = path("vegas", flow.vegas.is_some());
            CcConfig::Vegas(vegas(cx, &p, r.alpha, r.beta, r.gamma)?)
        }
        CcName::Lp => {
            let r = global.lp.cloned().unwrap_or_default().overlaid(flow.lp);
            let p = path("lp", flow.lp.is_some());
            let d = LpConfig::default();
            CcConfig::Lp(LpConfig {
                threshold: fraction(cx, &p, "threshold", r.threshold, d.threshold)?,
                inference_rtts: positive(cx, &p, "inference_rtts", r.inference_rtts, d.inference_rtts)?,
            })
        }
        CcName::Nice => {
            let r = global.nice.cloned().unwrap_or_default().overlaid(flow.nice);
            let p = path("nice", flow.nice.is_some());
            let d = NiceConfig::default();
            let min_window = positive(cx, &p, "min_window", r.min_window, d.min_window)?;
            if min_window > 1.0 {
                return Err(cx.err(format!("{p}.min_window"), "must be at most 1 packet (Nice may go below one)"));
            }
            CcConfig::Nice(NiceConfig {
                threshold: fraction(cx, &p, "threshold", r.threshold, d.threshold)?,
                fraction: fraction(cx, &p, "fraction", r.fraction, d.fraction)?,
                min_window,
                vegas: vegas(cx, &p, r.alpha, r.beta, r.gamma)?,
            })
        }
        CcName::Ledbat => {
            let r = global.ledbat.cloned().unwrap_or_default().overlaid(flow.ledbat);
            CcConfig::Ledbat(ledbat(cx, &r, &path("ledbat", flow.ledbat.is_some()))?)
        }
    })
}

/// Checks every top-level controller table, used by a flow or not.
pub(super) fn check_globals(cx: &Ctx, global: &Controllers) -> Result<(), ScenarioError> {
    let none = Controllers::default();
    for table in global.present() {
        let cc = match table {
            "cubic" => CcName::Cubic,
            "vegas" => CcName::Vegas,
            "lp" => CcName::Lp,
            "nice" => CcName::Nice,
            _ => CcName::Ledbat,
        };
        build(cx, cc, global, &none, &|f| f.to_string())?;
    }
    Ok(())
}

fn positive(cx: &Ctx, at: &str, field: &str, v: Option<f64>, default: f64) -> Result<f64, ScenarioError> {
    let v = v.unwrap_or(default);
    if !(v.is_finite() && v > 0.0) {
        return Err(cx.err(format!("{at}.{field}"), format!("{v} is not allowed; must be a positive number")));
    }
    Ok(v)
}

fn fraction(cx: &Ctx, at: &str, field: &str, v: Option<f64>, default: f64) -> Result<f64, ScenarioError> {
    let v = v.unwrap_or(default);
    if !(v > 0.0 && v < 1.0) {
        return Err(cx.err(format!("{at}.{field}"), format!("{v} is not allowed; must be between 0 and 1 (exclusive)")));
    }
    Ok(v)
}

fn vegas(cx: &Ctx, at: &str, a: Option<f64>, b: Option<f64>, g: Option<f64>) -> Result<VegasConfig, ScenarioError> {
    let d = VegasConfig::default();
    let c = VegasConfig {
        alpha: positive(cx, at, "alpha", a, d.alpha)?,
        beta: positive(cx, at, "beta", b, d.beta)?,
        gamma: positive(cx, at, "gamma", g, d.gamma)?,
    };
    if c.alpha > c.beta {
        return Err(cx.err(format!("{at}.alpha"), format!("alpha ({}) must not exceed beta ({})", c.alpha, c.beta)));
    }
    Ok(c)
}

fn ledbat(cx: &Ctx, l: &RawLedbat, at: &str) -> Result<LedbatConfig, ScenarioError> {
    let mut c = LedbatConfig::default();
    if let Some(t) = l.target {
        if t.0 == Duration::ZERO {
            return Err(cx.err(format!("{at}.target"), "must be greater than zero"));
        }
        c.target = t.0;
    }
    c.gain = positive(cx, at, "gain", l.gain, c.gain)?;
    if let Some(m) = l.min_cwnd {
        if m == 0 {
            return Err(cx.err(format!("{at}.min_cwnd"), "must be at least 1 packet"));
        }
        c.min_cwnd = m;
    }
    if let Some(f) = l.current_filter {
        if f == 0 {
            return Err(cx.err(format!("{at}.current_filter"), "must be at least 1 sample"));
        }
        c.current_filter = f as usize;
    }
    match (l.base_history, l.base_interval) {
        (None, None) => {}
        (None, Some(_)) => {
            return Err(cx.err(format!("{at}.base_interval"), "only meaningful with base_history (a bucket count)"))
        }
        (Some(0), _) => return Err(cx.err(format!("{at}.base_history"), "must be at least 1 bucket")),
        (Some(n), i) => {
            let i = i.map_or(Duration::from_secs(60), |d| d.0);
            if i == Duration::ZERO {
                return Err(cx.err(format!("{at}.base_interval"), "must be greater than zero"));
            }
            c.base_history = Some((n as usize, i));
        }
    }
    Ok(c)
}
