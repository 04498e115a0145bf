// The start-up watchdog (issue 27, finding 2): from the process's start until the ranks first agree on the
// command line, a rank can wait inside MPI_Init_thread or a first collective for a peer that never starts or
// stalls, and such calls never return. A timer thread of its own ends the process with exit 3 and a line
// naming what it waited for once --timeout (read from argv before anything is parsed; default 300 s)
// passes, and turns SIGINT/SIGTERM during start-up into exit 3 too (not the shell's 130/143).
#pragma once

#include <string>

namespace sb {

// Starts the thread and installs the stop handlers. `argv` is scanned for --timeout only.
void start_startup_watchdog(int argc, char** argv);
// What start-up waits for now ("MPI initialisation (MPI_Init_thread)"), for the message.
void startup_stage(const std::string& what);
// Start-up is done: stops the thread and gives SIGINT/SIGTERM back their default action. A stop signal
// that arrived meanwhile ends the process here (exit 3). Safe to call twice.
void end_startup_watchdog();

// --timeout's value in `argv` ("--timeout 3", "--timeout=3"), or 300 when absent or not a positive finite
// number (the command-line parser refuses those with their own message).
double startup_timeout_seconds(int argc, const char* const* argv);

}  // namespace sb
