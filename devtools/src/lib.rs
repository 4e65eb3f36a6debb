//! Local stand-ins for the parts users have in AWS and in their CRM, so the
//! pipeline runs and is tested on one machine: a CRM that upserts by
//! external id over real HTTP, and stream events in Lambda's shape.
//! Never deployed.

pub mod crm_stub;
pub mod demo_page;
pub mod fakes;
pub mod fault_proxy;
pub mod http_api;
pub mod human_log;
pub mod lambda_emulator;
pub mod local;
pub mod log_capture;
pub mod notice_endpoint;
pub mod pump;
pub mod server;
pub mod sign_event;
pub mod stream_event;
pub mod template;
pub mod write_meter;
