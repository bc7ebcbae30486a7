#include "model/regs/codes.h"

namespace vhca {

#define VHCA_CODE_SPEC(n, v, d) {#n, v, d},
const std::vector<CodeList>& code_lists() {
  static const std::vector<CodeList> lists = {
      {"CQE opcodes (op_own[7:4])", "CQE_OP", 4, {VHCA_CQE_OPCODES(VHCA_CODE_SPEC)}},
      {"Send WQE opcodes (also a requester CQE's send_opcode)", "WQE_OP", 8, {VHCA_WQE_OPCODES(VHCA_CODE_SPEC)}},
      {"Completion syndromes (error CQE)", "SYNDROME", 8, {VHCA_SYNDROMES(VHCA_CODE_SPEC)}},
      {"EQE event types", "EQE_TYPE", 8, {VHCA_EQE_TYPES(VHCA_CODE_SPEC)}},
      {"QP fatal EQE syndromes", "QP_FATAL", 8, {VHCA_QP_FATAL_SYNDROMES(VHCA_CODE_SPEC)}},
      {"CQ error EQE syndromes", "CQ_ERROR", 8, {VHCA_CQ_ERROR_SYNDROMES(VHCA_CODE_SPEC)}},
      {"port change EQE syndromes (PORT_STATE values)", "PORT_CHANGE", 8, {VHCA_PORT_CHANGE_SYNDROMES(VHCA_CODE_SPEC)}},
      {"DMA error EQE syndromes", "DMA_ERROR", 8, {VHCA_DMA_ERROR_SYNDROMES(VHCA_CODE_SPEC)}},
      {"CQ states (CQ context)", "CQ_STATE", 3, {VHCA_CQ_STATES(VHCA_CODE_SPEC)}},
      {"CQ control ops (firmware to CQ writer)", "CQ_CTL", 3, {VHCA_CQ_CONTROL_OPS(VHCA_CODE_SPEC)}},
      {"Arm commands", "ARM", 1, {VHCA_ARM_COMMANDS(VHCA_CODE_SPEC)}},
      {"Doorbell refusal reasons (LAST_BAD_DOORBELL[31:24])", "DB_ERR", 8, {VHCA_DOORBELL_ERRORS(VHCA_CODE_SPEC)}},
      {"QP states (MODIFY_QP, QUERY_QP)", "QP_STATE", 3, {VHCA_QP_STATES(VHCA_CODE_SPEC)}},
      {"QP types (CREATE_QP)", "QP_TYPE", 3, {VHCA_QP_TYPES(VHCA_CODE_SPEC)}},
      {"Command status (command block status byte)", "CMD_STATUS", 8, {VHCA_CMD_STATUSES(VHCA_CODE_SPEC)}},
      {"Command failure reasons (syndrome[7:0])", "CMD_REASON", 8, {VHCA_CMD_REASONS(VHCA_CODE_SPEC)}},
  };
  return lists;
}
#undef VHCA_CODE_SPEC

}  // namespace vhca
