//! Integration tests of the remote backends against small servers started in each test.

mod faults;
mod judge;
mod next_token;
mod probe;
mod replicas;
mod scalar;
mod support;
mod templated;
