// Argument checks for methods called from JS: every mismatch is a TypeError naming the argument,
// never a crash or a silent coercion.
#pragma once

#include <napi.h>

#include <cstdint>
#include <optional>
#include <string>

namespace ebpf_studio {

std::string StringArg(const Napi::CallbackInfo& info, size_t index, const char* name);
bool BoolArg(const Napi::CallbackInfo& info, size_t index, const char* name);
int64_t IntArg(const Napi::CallbackInfo& info, size_t index, const char* name, int64_t min, int64_t max);
Napi::Buffer<uint8_t> BufferArg(const Napi::CallbackInfo& info, size_t index, const char* name);
Napi::Function FunctionArg(const Napi::CallbackInfo& info, size_t index, const char* name);
Napi::Object ObjectArg(const Napi::CallbackInfo& info, size_t index, const char* name);
// An optional options object: undefined gives an empty object.
Napi::Object OptionalObjectArg(const Napi::CallbackInfo& info, size_t index, const char* name);

// Fields of an options object; `where` names the object in messages ("options").
std::string StringField(Napi::Object obj, const char* where, const char* field);
std::optional<std::string> OptionalStringField(Napi::Object obj, const char* where, const char* field);
int64_t IntField(Napi::Object obj, const char* where, const char* field, int64_t min, int64_t max);
std::optional<int64_t> OptionalIntField(Napi::Object obj, const char* where, const char* field, int64_t min,
                                        int64_t max);
bool BoolField(Napi::Object obj, const char* where, const char* field);
std::optional<bool> OptionalBoolField(Napi::Object obj, const char* where, const char* field);

}  // namespace ebpf_studio
