#pragma once
// Unit conversions. Everything inside llmsim is SI (bytes, seconds, FLOP/s, bytes/s); config keys
// carry their unit in the name and are converted once, at parse time, with these constants.

namespace llmsim::units {

inline constexpr double KiB = 1024.0;           // bytes
inline constexpr double MiB = 1024.0 * 1024.0;  // bytes
inline constexpr double GiB = 1024.0 * MiB;     // bytes
inline constexpr double TiB = 1024.0 * GiB;     // bytes
inline constexpr double kB = 1e3;               // bytes
inline constexpr double MB = 1e6;               // bytes
inline constexpr double GB = 1e9;               // bytes
inline constexpr double TB = 1e12;              // bytes
inline constexpr double GBps = 1e9;             // bytes/s
inline constexpr double Gbps = 1e9 / 8.0;       // bits/s expressed in bytes/s
inline constexpr double TFLOPs = 1e12;          // FLOP/s
inline constexpr double MHz = 1e6;              // Hz
inline constexpr double us = 1e-6;              // seconds
inline constexpr double ms = 1e-3;              // seconds

}  // namespace llmsim::units
