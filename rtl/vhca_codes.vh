// Generated from model/regs/codes.h by vhca-gen-docs; do not edit by hand.
// The hardware contract's code values, included inside a module body.
// CQE opcodes (op_own[7:4])
localparam [3:0] CQE_OP_REQ = 4'h0;
localparam [3:0] CQE_OP_RESP_WRITE_IMM = 4'h1;
localparam [3:0] CQE_OP_RESP_SEND = 4'h2;
localparam [3:0] CQE_OP_RESP_SEND_IMM = 4'h3;
localparam [3:0] CQE_OP_REQ_ERR = 4'hD;
localparam [3:0] CQE_OP_RESP_ERR = 4'hE;
localparam [3:0] CQE_OP_INVALID = 4'hF;
// Send WQE opcodes (also a requester CQE's send_opcode)
localparam [7:0] WQE_OP_RDMA_WRITE = 8'h8;
localparam [7:0] WQE_OP_RDMA_WRITE_IMM = 8'h9;
localparam [7:0] WQE_OP_SEND = 8'hA;
localparam [7:0] WQE_OP_SEND_IMM = 8'hB;
localparam [7:0] WQE_OP_RDMA_READ = 8'h10;
localparam [7:0] WQE_OP_ATOMIC_CS = 8'h11;
localparam [7:0] WQE_OP_ATOMIC_FA = 8'h12;
// Completion syndromes (error CQE)
localparam [7:0] SYNDROME_LOCAL_LENGTH = 8'h1;
localparam [7:0] SYNDROME_LOCAL_QP_OP = 8'h2;
localparam [7:0] SYNDROME_LOCAL_PROTECTION = 8'h4;
localparam [7:0] SYNDROME_WR_FLUSH = 8'h5;
localparam [7:0] SYNDROME_BAD_RESPONSE = 8'h10;
localparam [7:0] SYNDROME_LOCAL_ACCESS = 8'h11;
localparam [7:0] SYNDROME_REMOTE_INVALID_REQUEST = 8'h12;
localparam [7:0] SYNDROME_REMOTE_ACCESS = 8'h13;
localparam [7:0] SYNDROME_REMOTE_OP = 8'h14;
localparam [7:0] SYNDROME_RETRY_EXCEEDED = 8'h15;
localparam [7:0] SYNDROME_RNR_RETRY_EXCEEDED = 8'h16;
// EQE event types
localparam [7:0] EQE_TYPE_COMPLETION = 8'h0;
localparam [7:0] EQE_TYPE_SQ_DRAINED = 8'h3;
localparam [7:0] EQE_TYPE_CQ_ERROR = 8'h4;
localparam [7:0] EQE_TYPE_QP_FATAL = 8'h5;
localparam [7:0] EQE_TYPE_DMA_ERROR = 8'h8;
localparam [7:0] EQE_TYPE_PORT_CHANGE = 8'h9;
localparam [7:0] EQE_TYPE_COMMAND_DONE = 8'hA;
localparam [7:0] EQE_TYPE_EQ_OVERRUN = 8'hB;
localparam [7:0] EQE_TYPE_SRQ_LIMIT = 8'h14;
// QP fatal EQE syndromes
localparam [7:0] QP_FATAL_QP_CQ_OVERRUN = 8'h1;
localparam [7:0] QP_FATAL_QP_CQ_ERROR = 8'h2;
// CQ error EQE syndromes
localparam [7:0] CQ_ERROR_CQ_OVERRUN = 8'h1;
localparam [7:0] CQ_ERROR_CQ_ACCESS_VIOLATION = 8'h2;
localparam [7:0] CQ_ERROR_CQ_BAD_DOORBELL_RECORD = 8'h3;
// port change EQE syndromes (PORT_STATE values)
localparam [7:0] PORT_CHANGE_PORT_DOWN = 8'h1;
localparam [7:0] PORT_CHANGE_PORT_ACTIVE = 8'h4;
// CQ states (CQ context)
localparam [2:0] CQ_STATE_DISARMED = 3'h0;
localparam [2:0] CQ_STATE_ARMED_NEXT = 3'h1;
localparam [2:0] CQ_STATE_ARMED_SOLICITED = 3'h2;
localparam [2:0] CQ_STATE_ALWAYS_ARMED = 3'h3;
localparam [2:0] CQ_STATE_ERROR = 3'h4;
// CQ control ops (firmware to CQ writer)
localparam [2:0] CQ_CTL_CREATE = 3'h0;
localparam [2:0] CQ_CTL_MODIFY_MODERATION = 3'h1;
localparam [2:0] CQ_CTL_RESIZE_BEGIN = 3'h2;
localparam [2:0] CQ_CTL_RESIZE_COMMIT = 3'h3;
localparam [2:0] CQ_CTL_RESIZE_ABORT = 3'h4;
localparam [2:0] CQ_CTL_DESTROY = 3'h5;
// Arm commands
localparam [0:0] ARM_NEXT = 1'h0;
localparam [0:0] ARM_SOLICITED = 1'h1;
// Doorbell refusal reasons (LAST_BAD_DOORBELL[31:24])
localparam [7:0] DB_ERR_UNKNOWN_OBJECT = 8'h1;
localparam [7:0] DB_ERR_OBJECT_IN_ERROR = 8'h2;
localparam [7:0] DB_ERR_INDEX_OUT_OF_RANGE = 8'h3;
localparam [7:0] DB_ERR_STALE_ARM_SN = 8'h4;
localparam [7:0] DB_ERR_FIFO_FULL = 8'h5;
localparam [7:0] DB_ERR_QP_STATE = 8'h6;
