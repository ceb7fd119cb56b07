import {
  create,
  type DescFile,
  type DescService,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import type * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

type Request = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;
type ResponseInit = MessageInitShape<typeof v1.ServerReflectionResponseSchema>;

/**
 * gRPC server reflection (v1 and v1alpha, the same protocol under two names), built
 * from the generated descriptors of the services served, so that `buf curl`, grpcurl
 * and other reflection clients need no `--schema`.
 */
export class Reflection {
  private readonly files = new Map<string, DescFile>();
  private readonly symbols = new Map<string, DescFile>();

  constructor(private readonly services: readonly DescService[]) {
    for (const service of services) this.addFile(service.file);
  }

  private addFile(file: DescFile): void {
    if (this.files.has(file.proto.name)) return;
    this.files.set(file.proto.name, file);
    for (const m of file.messages) this.addMessage(m.typeName, m, file);
    for (const e of file.enums) this.symbols.set(e.typeName, file);
    for (const x of file.extensions) this.symbols.set(x.typeName, file);
    for (const s of file.services) {
      this.symbols.set(s.typeName, file);
      for (const method of s.methods) this.symbols.set(`${s.typeName}.${method.name}`, file);
    }
    for (const dependency of file.dependencies) this.addFile(dependency);
  }

  private addMessage(name: string, message: DescFile["messages"][number], file: DescFile): void {
    this.symbols.set(name, file);
    for (const nested of message.nestedMessages) this.addMessage(nested.typeName, nested, file);
    for (const e of message.nestedEnums) this.symbols.set(e.typeName, file);
  }

  /** The answer to one request. */
  answer(request: Request): ResponseInit {
    const original = create(v1.ServerReflectionRequestSchema, {
      host: request.host,
      messageRequest: request.messageRequest as v1.ServerReflectionRequest["messageRequest"],
    });
    const base = { validHost: request.host, originalRequest: original };
    const r = request.messageRequest;
    switch (r.case) {
      case "listServices":
        return {
          ...base,
          messageResponse: {
            case: "listServicesResponse",
            value: { service: this.services.map((s) => ({ name: s.typeName })) },
          },
        };
      case "fileByFilename":
        return this.fileResponse(base, this.files.get(r.value), `no file "${r.value}"`);
      case "fileContainingSymbol":
        return this.fileResponse(base, this.symbols.get(r.value), `no symbol "${r.value}"`);
      default:
        return {
          ...base,
          messageResponse: {
            case: "errorResponse",
            value: { errorCode: Code.Unimplemented, errorMessage: "not supported" },
          },
        };
    }
  }

  /** The file and every file it depends on, as serialized FileDescriptorProtos. */
  private fileResponse(
    base: { validHost: string; originalRequest: v1.ServerReflectionRequest },
    file: DescFile | undefined,
    notFound: string,
  ): ResponseInit {
    if (file === undefined) {
      return {
        ...base,
        messageResponse: {
          case: "errorResponse",
          value: { errorCode: Code.NotFound, errorMessage: notFound },
        },
      };
    }
    const all: DescFile[] = [];
    const visit = (f: DescFile) => {
      if (all.includes(f)) return;
      all.push(f);
      for (const d of f.dependencies) visit(d);
    };
    visit(file);
    return {
      ...base,
      messageResponse: {
        case: "fileDescriptorResponse",
        value: {
          fileDescriptorProto: all.map((f) => toBinary(FileDescriptorProtoSchema, f.proto)),
        },
      },
    };
  }

  /** The v1 service. */
  v1(): ServiceImpl<typeof v1.ServerReflection> {
    const reflection = this;
    return {
      async *serverReflectionInfo(requests) {
        for await (const request of requests) yield reflection.answer(request);
      },
    };
  }

  /** The v1alpha service: the same answers under the older name. */
  v1alpha(): ServiceImpl<typeof v1alpha.ServerReflection> {
    const reflection = this;
    return {
      async *serverReflectionInfo(requests) {
        for await (const request of requests) {
          yield reflection.answer(request) as MessageInitShape<
            typeof v1alpha.ServerReflectionResponseSchema
          >;
        }
      },
    };
  }
}
