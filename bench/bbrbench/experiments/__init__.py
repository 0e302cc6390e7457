"""Many runs with a purpose: sweeps, compare, fidelity, overhead, the lockstep check, the delay-line
benchmark."""
