// The translation unit that makes CAF's precompiled header for every
// target of ours (bus_caf_pch in actors/CMakeLists.txt); CMake includes
// caf/all.hpp into it, and nothing else is in it.
