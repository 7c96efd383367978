//! What a replay prints and draws from its runs: dollars, distributions,
//! the frontier, the headline, policy families and the HTML report.

pub mod distribution;
pub mod dollars;
pub mod family;
pub mod frontier_plot;
pub mod headline;
pub mod html;
