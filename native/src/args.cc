#include "args.h"

#include <cmath>

#include "errors.h"

namespace ebpf_studio {

namespace {

std::string ArgLabel(size_t index, const char* name) {
  return "argument " + std::to_string(index + 1) + " (" + name + ")";
}

std::string FieldLabel(const char* where, const char* field) { return std::string(where) + "." + field; }

int64_t CheckInt(Napi::Env env, Napi::Value v, const std::string& label, int64_t min, int64_t max) {
  if (!v.IsNumber()) ThrowTypeError(env, label + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::trunc(d) != d) ThrowTypeError(env, label + " must be an integer");
  if (d < static_cast<double>(min) || d > static_cast<double>(max)) {
    throw Napi::RangeError::New(env, label + " must be between " + std::to_string(min) + " and " +
                                         std::to_string(max));
  }
  return static_cast<int64_t>(d);
}

}  // namespace

std::string StringArg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (!info[index].IsString()) ThrowTypeError(info.Env(), ArgLabel(index, name) + " must be a string");
  return info[index].As<Napi::String>().Utf8Value();
}

bool BoolArg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (!info[index].IsBoolean()) ThrowTypeError(info.Env(), ArgLabel(index, name) + " must be a boolean");
  return info[index].As<Napi::Boolean>().Value();
}

int64_t IntArg(const Napi::CallbackInfo& info, size_t index, const char* name, int64_t min, int64_t max) {
  return CheckInt(info.Env(), info[index], ArgLabel(index, name), min, max);
}

Napi::Buffer<uint8_t> BufferArg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (!info[index].IsBuffer()) ThrowTypeError(info.Env(), ArgLabel(index, name) + " must be a Buffer");
  return info[index].As<Napi::Buffer<uint8_t>>();
}

Napi::Function FunctionArg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (!info[index].IsFunction()) ThrowTypeError(info.Env(), ArgLabel(index, name) + " must be a function");
  return info[index].As<Napi::Function>();
}

Napi::Object ObjectArg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (!info[index].IsObject()) ThrowTypeError(info.Env(), ArgLabel(index, name) + " must be an object");
  return info[index].As<Napi::Object>();
}

Napi::Object OptionalObjectArg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (info[index].IsUndefined()) return Napi::Object::New(info.Env());
  return ObjectArg(info, index, name);
}

std::string StringField(Napi::Object obj, const char* where, const char* field) {
  Napi::Value v = obj.Get(field);
  if (!v.IsString()) ThrowTypeError(obj.Env(), FieldLabel(where, field) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

std::optional<std::string> OptionalStringField(Napi::Object obj, const char* where, const char* field) {
  if (obj.Get(field).IsUndefined()) return std::nullopt;
  return StringField(obj, where, field);
}

int64_t IntField(Napi::Object obj, const char* where, const char* field, int64_t min, int64_t max) {
  return CheckInt(obj.Env(), obj.Get(field), FieldLabel(where, field), min, max);
}

std::optional<int64_t> OptionalIntField(Napi::Object obj, const char* where, const char* field, int64_t min,
                                        int64_t max) {
  if (obj.Get(field).IsUndefined()) return std::nullopt;
  return IntField(obj, where, field, min, max);
}

bool BoolField(Napi::Object obj, const char* where, const char* field) {
  Napi::Value v = obj.Get(field);
  if (!v.IsBoolean()) ThrowTypeError(obj.Env(), FieldLabel(where, field) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

std::optional<bool> OptionalBoolField(Napi::Object obj, const char* where, const char* field) {
  if (obj.Get(field).IsUndefined()) return std::nullopt;
  return BoolField(obj, where, field);
}

}  // namespace ebpf_studio
